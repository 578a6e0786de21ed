//! How a cell, a check or a framework's availability ends, in every mode: [`Outcome`], `Ok` or
//! a [`NotOk`] that is either not run ([`NotRun`]: skipped with the install hint, or unsupported
//! with the reason) or failed with its error chain. `check`'s rows, the in-process cells, the
//! driver's [`crate::driver::stats::Status`] and [`crate::framework::Framework::available`] all
//! speak it, and [`NotOk::note`] is the one way a command prints one.

use std::fmt;

use serde::{Deserialize, Serialize};

/// `Ok`, or why not.
pub type Outcome<T = ()> = Result<T, NotOk>;

/// Why something was not run: never a failure. Its JSON form (`{"kind": "skipped", "reason":
/// …}`) is the one results files have always carried for the driver's status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "reason", rename_all = "snake_case")]
pub enum NotRun {
    /// It cannot run here (a missing tool or service): one line with the command that installs
    /// it.
    Skipped(String),
    /// The framework cannot serve the scenario through its own API
    /// ([`crate::framework::Framework::CANNOT`]), or does not speak the protocol, or the mode
    /// has no such cell (`upload_chunked` in-process); why. Shown as `–`.
    Unsupported(String),
}

impl NotRun {
    /// The table cell: `skip` or `–`.
    pub(crate) fn mark(&self) -> &'static str {
        match self {
            NotRun::Skipped(_) => "skip",
            NotRun::Unsupported(_) => "–",
        }
    }

    /// The install hint or the reason.
    pub(crate) fn reason(&self) -> &str {
        match self {
            NotRun::Skipped(why) | NotRun::Unsupported(why) => why,
        }
    }
}

/// Why an [`Outcome`] is not `Ok`: not run, or failed.
#[derive(Debug)]
pub enum NotOk {
    /// Not run, and not a failure.
    NotRun(NotRun),
    /// Ran and failed (the app did not build, a request failed, the answer differed from the
    /// oracle), with the error's chain of causes.
    Failed(anyhow::Error),
}

impl NotOk {
    /// Not run: it cannot run here; `hint` says what to install.
    pub(crate) fn skipped(hint: impl Into<String>) -> NotOk {
        NotOk::NotRun(NotRun::Skipped(hint.into()))
    }

    /// Not run: the framework or the mode has no such cell; `why`.
    pub(crate) fn unsupported(why: impl Into<String>) -> NotOk {
        NotOk::NotRun(NotRun::Unsupported(why.into()))
    }

    /// Whether it failed (anything but not run).
    pub(crate) fn is_failure(&self) -> bool {
        matches!(self, NotOk::Failed(_))
    }

    /// The table cell: `skip`, `–` or `FAIL`.
    pub(crate) fn mark(&self) -> &'static str {
        match self {
            NotOk::NotRun(n) => n.mark(),
            NotOk::Failed(_) => "FAIL",
        }
    }

    /// The line a command prints for it: `skip iron: …`, `– iron upload: …`, `FAIL iron: …`.
    pub fn note(&self, subject: impl fmt::Display) -> String {
        format!("{} {subject}: {self}", self.mark())
    }
}

impl From<NotRun> for NotOk {
    fn from(n: NotRun) -> NotOk {
        NotOk::NotRun(n)
    }
}

impl From<anyhow::Error> for NotOk {
    fn from(e: anyhow::Error) -> NotOk {
        NotOk::Failed(e)
    }
}

/// The install hint or the reason alone ([`NotRun::mark`] says which).
impl fmt::Display for NotRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.reason())
    }
}

/// The install hint, the reason, or the failure's chain of causes, on one line; [`NotOk::note`]
/// adds the mark and what it is about.
impl fmt::Display for NotOk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotOk::NotRun(n) => n.fmt(f),
            NotOk::Failed(e) => write!(f, "{e:#}"),
        }
    }
}

impl std::error::Error for NotRun {}

impl std::error::Error for NotOk {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_name_their_mark_and_reason() {
        let failed = NotOk::from(anyhow::anyhow!("connection refused").context("build"));
        assert_eq!(failed.note("iron"), "FAIL iron: build: connection refused");
        assert_eq!(
            NotOk::skipped("install go").note("gin"),
            "skip gin: install go"
        );
        assert_eq!(
            NotOk::unsupported("no h2c").note("iron upload"),
            "– iron upload: no h2c"
        );
        assert!(failed.is_failure() && !NotOk::skipped("").is_failure());
    }

    #[test]
    fn not_run_keeps_the_results_files_form() {
        let json = serde_json::to_string(&NotRun::Skipped("install go".into())).unwrap();
        assert_eq!(json, r#"{"kind":"skipped","reason":"install go"}"#);
        let back: NotRun = serde_json::from_str(r#"{"kind":"unsupported","reason":"x"}"#).unwrap();
        assert_eq!(back, NotRun::Unsupported("x".into()));
    }
}
