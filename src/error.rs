//! The CLI's one error: an exit code and one line. Everything below the binaries' `main` is
//! `anyhow`, the commands included, with context added where the error starts; the one boundary
//! is [`CliError::from`], which `main` calls and prints as `error: …`: a failure of the run
//! (exit 1), its chain of causes on one line, or exit 2 where a cause is [`BadInput`] ([`usage`]
//! makes one). A typed error is kept only where a caller branches on its kind
//! ([`crate::outcome::NotOk`]).

use std::process::ExitCode;

/// A failure with its exit code: 2 for bad input (a flag, a name, a file), 1 for everything else.
#[derive(Debug)]
pub struct CliError(pub u8, pub String);

impl CliError {
    /// Prints `error: <the line>` on stderr and returns the exit code.
    pub fn exit(self) -> ExitCode {
        eprintln!("error: {}", self.1.replace('\n', " "));
        ExitCode::from(self.0)
    }
}

/// A usage error (exit 2): the command line asked for something that cannot be.
pub(crate) fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(msg.into()))
}

/// Bad input: the command line, or a file from outside (a results file, a gungraun summary, a
/// criterion estimate) that cannot be read as what it claims to be. Exit 2 like a bad flag,
/// wherever in the chain of causes it sits.
#[derive(Debug)]
pub(crate) struct BadInput(pub(crate) String);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// A failure of the run (exit 1), with the whole chain of causes on one line; exit 2 where a
/// cause is [`BadInput`].
impl From<anyhow::Error> for CliError {
    fn from(e: anyhow::Error) -> Self {
        let code = if e.chain().any(|c| c.is::<BadInput>()) {
            2
        } else {
            1
        };
        CliError(code, format!("{e:#}"))
    }
}

/// A clap error in one line, from its kind and context (the words clap's own renderer uses),
/// without the usage block clap prints after it; never from clap's rendered text.
pub fn usage_line(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ErrorKind};
    let get = |k: ContextKind| e.get(k).map(ToString::to_string);
    let quoted = |k: ContextKind| get(k).map_or_else(String::new, |v| format!("'{v}'"));
    let mut line = match e.kind() {
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => {
            let mut l = format!(
                "invalid value {} for {}",
                quoted(ContextKind::InvalidValue),
                quoted(ContextKind::InvalidArg)
            );
            if let Some(cause) = std::error::Error::source(e) {
                l.push_str(&format!(": {cause}"));
            }
            l
        }
        ErrorKind::UnknownArgument => {
            format!("unexpected argument {}", quoted(ContextKind::InvalidArg))
        }
        ErrorKind::InvalidSubcommand => format!(
            "unrecognized subcommand {}",
            quoted(ContextKind::InvalidSubcommand)
        ),
        ErrorKind::MissingRequiredArgument => format!(
            "the following required arguments were not provided: {}",
            get(ContextKind::InvalidArg).unwrap_or_default()
        ),
        ErrorKind::ArgumentConflict => format!(
            "the argument {} cannot be used with {}",
            quoted(ContextKind::InvalidArg),
            get(ContextKind::PriorArg)
                .map_or_else(|| "another argument".into(), |v| format!("'{v}'"))
        ),
        ErrorKind::TooManyValues => format!(
            "unexpected value {} for {}",
            quoted(ContextKind::InvalidValue),
            quoted(ContextKind::InvalidArg)
        ),
        kind => kind.as_str().unwrap_or("invalid arguments").to_owned(),
    };
    if let Some(valid) = get(ContextKind::ValidValue) {
        line.push_str(&format!(" (possible values: {valid})"));
    }
    for k in [
        ContextKind::SuggestedArg,
        ContextKind::SuggestedValue,
        ContextKind::SuggestedSubcommand,
    ] {
        if let Some(s) = get(k) {
            line.push_str(&format!(" (did you mean '{s}'?)"));
        }
    }
    line
}

/// Installs the panic hook of the `framebench` binary: a panic on any thread but the main one is
/// printed as one line (the thread, where, and the message), and only the first at each place
/// in the code, never with a backtrace, whatever `RUST_BACKTRACE` says; the main thread keeps
/// the default hook.
///
/// The other threads are mostly the servers' own: a framework's worker that panics on hostile
/// input (xitca-web 0.8.1 on invalid UTF-8 under Autobahn, 72 times in one publication's run)
/// is a finding the check reports as its outcome, and the default hook under `RUST_BACKTRACE=1`
/// printed some 20 lines of trace for each into `check --conformance`'s output. A panic of
/// framebench's own on the main thread is a bug, and its trace is what a report of it needs.
pub fn one_line_thread_panics() {
    let default = std::panic::take_hook();
    let seen = std::sync::Mutex::new(std::collections::HashSet::new());
    std::panic::set_hook(Box::new(move |info| {
        let thread = std::thread::current();
        if thread.name() == Some("main") {
            return default(info);
        }
        let at = info
            .location()
            .map_or(String::new(), |l| format!(" at {}:{}", l.file(), l.line()));
        if !seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(at.clone())
        {
            return;
        }
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(a panic without a message)".to_owned());
        eprintln!(
            "thread '{}' panicked{at}: {} (later panics there are not printed)",
            thread.name().unwrap_or("unnamed"),
            message.replace('\n', " ")
        );
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn a_chain_of_causes_is_one_line_and_exit_1() {
        let e: Result<(), anyhow::Error> =
            Err(std::io::Error::other("disk full")).context("cannot write out.json");
        let CliError(code, line) = e.unwrap_err().into();
        assert_eq!(
            (code, line.as_str()),
            (1, "cannot write out.json: disk full")
        );
        assert_eq!(CliError::from(usage("no such framework")).0, 2);
        let bad: anyhow::Error = anyhow::Error::new(BadInput("version 6".into()));
        let CliError(code, line) = bad.context("target/x/summary.json").into();
        assert_eq!(
            (code, line.as_str()),
            (2, "target/x/summary.json: version 6")
        );
    }

    #[derive(clap::Parser, Debug)]
    struct Args {
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..=8))]
        threads: Option<u16>,
        #[arg(long, value_parser = ["off", "sink"])]
        logging: Option<String>,
        #[arg(long, conflicts_with = "threads")]
        rate: Option<u32>,
    }

    fn line(args: &[&str]) -> String {
        use clap::Parser;
        let e =
            Args::try_parse_from(std::iter::once("fb").chain(args.iter().copied())).unwrap_err();
        usage_line(&e)
    }

    #[test]
    fn clap_errors_become_one_line_by_kind() {
        let l = line(&["--threads", "9"]);
        assert!(
            l.starts_with("invalid value '9' for '--threads <THREADS>': "),
            "{l}"
        );
        assert!(l.contains("1..=8"), "{l}");
        assert_eq!(
            line(&["--logging", "loud"]),
            "invalid value 'loud' for '--logging <LOGGING>' (possible values: off, sink)"
        );
        assert_eq!(
            line(&["--thread", "2"]),
            "unexpected argument '--thread' (did you mean '--threads'?)"
        );
        assert_eq!(
            line(&["--threads", "2", "--rate", "5"]),
            "the argument '--threads <THREADS>' cannot be used with '--rate <RATE>'"
        );
        for args in [&["--threads", "9"][..], &["--bogus"]] {
            assert!(!line(args).contains('\n') && !line(args).contains("Usage"));
        }
    }
}
