//! The optional tools: `redis-server`, `go`, `wrk`, `valgrind`, `gungraun-runner` and
//! libfaketime. framebench runs without any of them; each is detected once per process, here,
//! and whatever needs a missing one is skipped with one line that names the tool and the command
//! that installs it ([`Tool::skip`]). A missing tool is never an error, unless the run asks for
//! it with `FRAMEBENCH_REQUIRE`.
//!
//! - `FRAMEBENCH_<TOOL>` (see [`Tool::env_var`]) overrides where a tool is looked for. A path
//!   that does not exist hides the tool, which is how CI runs the suite as a fresh machine sees
//!   it: `FRAMEBENCH_REDIS_SERVER=/nonexistent cargo test`.
//! - `FRAMEBENCH_REQUIRE=redis,go,…` (or `all`) turns a missing tool into a failure: commands
//!   exit 1 with one line, `cargo test` fails (`tests/testsuite/tools.rs`), the callgrind benches
//!   exit 1. CI sets it for its full run, so a silently skipped suite cannot pass there.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

use anyhow::{anyhow, bail};

/// Names the environment variable that makes tools required.
pub const REQUIRE_ENV: &str = "FRAMEBENCH_REQUIRE";

/// Where Debian's `faketime` package puts the preloadable library.
const FAKETIME_DEFAULT: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// Where a tool is, or why it cannot be used.
type Detected = Result<&'static Path, &'static str>;

/// One optional tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tool {
    /// `redis-server`, for the redis scenario.
    Redis,
    /// The Go toolchain, for the Go peers.
    Go,
    /// wrk, for `scripts/vs-wrk.sh`.
    Wrk,
    /// valgrind, for the callgrind benches and `framebench profile --callgrind`.
    Valgrind,
    /// `gungraun-runner` at the gungraun version in Cargo.lock, for the callgrind benches.
    Runner,
    /// libfaketime, which freezes the clock the callgrind benches count under.
    Faketime,
    /// Autobahn|Testsuite's `wstest`, WebSocket's conformance judge.
    Wstest,
}

impl Tool {
    /// Every tool.
    pub const ALL: [Tool; 7] = [
        Tool::Redis,
        Tool::Go,
        Tool::Wrk,
        Tool::Valgrind,
        Tool::Runner,
        Tool::Faketime,
        Tool::Wstest,
    ];

    /// The name `FRAMEBENCH_REQUIRE` takes.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Tool::Redis => "redis",
            Tool::Go => "go",
            Tool::Wrk => "wrk",
            Tool::Valgrind => "valgrind",
            Tool::Runner => "gungraun-runner",
            Tool::Faketime => "faketime",
            Tool::Wstest => "wstest",
        }
    }

    /// The variable that overrides where the tool is looked for.
    pub fn env_var(self) -> &'static str {
        match self {
            Tool::Redis => "FRAMEBENCH_REDIS_SERVER",
            Tool::Go => "FRAMEBENCH_GO",
            Tool::Wrk => "FRAMEBENCH_WRK",
            Tool::Valgrind => "FRAMEBENCH_VALGRIND",
            Tool::Runner => "FRAMEBENCH_GUNGRAUN_RUNNER",
            Tool::Faketime => "FRAMEBENCH_FAKETIME",
            Tool::Wstest => "FRAMEBENCH_WSTEST",
        }
    }

    /// The program (or library) looked for when the variable is not set.
    fn default_location(self) -> &'static str {
        match self {
            Tool::Redis => "redis-server",
            Tool::Go => "go",
            Tool::Wrk => "wrk",
            Tool::Valgrind => "valgrind",
            Tool::Runner => "gungraun-runner",
            Tool::Faketime => FAKETIME_DEFAULT,
            Tool::Wstest => "wstest",
        }
    }

    /// What is skipped without it, for the skip line.
    pub(crate) fn what(self) -> &'static str {
        match self {
            Tool::Redis => "the redis scenario",
            // The peers' names live in their registry lines; this module sits below the registry.
            Tool::Go => "the Go peers in peers/go",
            Tool::Wrk => "the wrk comparison",
            Tool::Valgrind => "the callgrind benches and `framebench profile --callgrind`",
            Tool::Runner => "the callgrind benches",
            Tool::Faketime => "the frozen clock (some callgrind counts then vary between runs)",
            Tool::Wstest => "Autobahn|Testsuite (`check --conformance --protocol ws`)",
        }
    }

    /// The command that installs it.
    pub(crate) fn install(self) -> String {
        match self {
            Tool::Redis => "apt-get install redis-server".into(),
            Tool::Go => "apt-get install golang-go (or Go 1.22+ from go.dev/dl)".into(),
            Tool::Wrk => "apt-get install wrk".into(),
            Tool::Valgrind => "apt-get install valgrind".into(),
            Tool::Runner => format!(
                "cargo install gungraun-runner --version {} --locked",
                gungraun_version()
            ),
            Tool::Faketime => "apt-get install faketime".into(),
            // Autobahn|Testsuite is Python 2 only: the script makes a virtual environment of
            // its own and says where its `wstest` is.
            Tool::Wstest => {
                "scripts/autobahn.sh (Python 2.7, then export FRAMEBENCH_WSTEST=target/autobahn/venv/bin/wstest)"
                    .into()
            }
        }
    }

    /// Where the tool is, or one line saying why it cannot be used here. Detected once.
    pub fn path(self) -> Result<&'static Path, &'static str> {
        static FOUND: OnceLock<Mutex<Vec<(Tool, Detected)>>> = OnceLock::new();
        let mut found = FOUND
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some((_, r)) = found.iter().find(|(t, _)| *t == self) {
            return *r;
        }
        let r = self
            .detect()
            .map(|p| &*Box::leak(p.into_boxed_path()))
            .map_err(|e| &*Box::leak(format!("{e:#}").into_boxed_str()));
        found.push((self, r));
        r
    }

    fn detect(self) -> anyhow::Result<PathBuf> {
        self.detect_with(std::env::var_os(self.env_var()).filter(|v| !v.is_empty()))
    }

    /// Detection with the override given, not read from the environment.
    fn detect_with(self, overridden: Option<std::ffi::OsString>) -> anyhow::Result<PathBuf> {
        let wanted = overridden
            .clone()
            .map_or_else(|| PathBuf::from(self.default_location()), PathBuf::from);
        let not_found = || {
            let via = match &overridden {
                Some(v) => format!(" at {} (${})", Path::new(v).display(), self.env_var()),
                None => String::new(),
            };
            anyhow!(
                "{} not found{via}: install it with `{}`",
                self.default_location_name(),
                self.install()
            )
        };
        if self == Tool::Faketime {
            return if wanted.is_file() {
                Ok(wanted)
            } else {
                Err(not_found())
            };
        }
        let path = find_program(&wanted).ok_or_else(not_found)?;
        let runs = match self {
            Tool::Redis | Tool::Valgrind => Command::new(&path)
                .arg("--version")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success()),
            Tool::Go => go_version_of(&path).is_some(),
            Tool::Runner => {
                let want = gungraun_version();
                let have = Command::new(&path)
                    .arg("--version")
                    .stdin(Stdio::null())
                    .stderr(Stdio::null())
                    .output()
                    .ok()
                    .and_then(|o| String::from_utf8(o.stdout).ok())
                    .and_then(|s| s.split_whitespace().nth(1).map(str::to_owned))
                    .unwrap_or_else(|| "of unknown version".into());
                if have != want {
                    bail!(
                        "gungraun-runner {have} found at {}, but gungraun is {want}: install it \
                         with `{}`",
                        path.display(),
                        self.install()
                    );
                }
                true
            }
            Tool::Wrk | Tool::Faketime | Tool::Wstest => true,
        };
        if !runs {
            bail!(
                "{} does not run: install it with `{}`",
                path.display(),
                self.install()
            );
        }
        Ok(path)
    }

    /// The tool's name in messages.
    fn default_location_name(self) -> &'static str {
        match self {
            Tool::Faketime => "libfaketime",
            _ => self.default_location(),
        }
    }

    /// Whether `FRAMEBENCH_REQUIRE` names this tool (`callgrind` names valgrind and the runner).
    pub fn required(self) -> bool {
        required_names().iter().any(|n| {
            n == "all"
                || n == self.name()
                || (n == "callgrind" && matches!(self, Tool::Valgrind | Tool::Runner))
        })
    }

    /// Prints, once per process and tool, that [`Tool::what`] is skipped and why. Returns the
    /// reason. Call it only where the tool would have been used.
    pub fn skip(self) -> &'static str {
        let why = self.path().err().unwrap_or("not used");
        say_once(&format!("skipping {}: {why}", self.what()));
        why
    }
}

/// Prints `line` on stderr unless this process printed it already: one message per cause, not
/// one per cell. It writes to the file descriptor itself, past the test harness's capture, so
/// that `cargo test` also shows what it skipped.
pub(crate) fn say_once(line: &str) {
    static SAID: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    let mut said = SAID
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if said.insert(line.to_owned()) {
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }
}

/// The gungraun version in Cargo.lock, which `gungraun-runner` must match exactly.
pub(crate) fn gungraun_version() -> &'static str {
    crate::env::crate_version("gungraun", "").unwrap_or("?")
}

/// `go env GOVERSION` of the Go at `path`.
pub(crate) fn go_version_of(path: &Path) -> Option<String> {
    let out = Command::new(path)
        .args(["env", "GOVERSION"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let v = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !v.is_empty()).then_some(v)
}

/// `program` itself when it names a path, else the first match on `PATH`; executable files only.
fn find_program(program: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.components().count() > 1 || program.is_absolute() {
        // Absolute, so that a build run in another folder finds it too.
        let program = std::env::current_dir().ok()?.join(program);
        return executable(&program).then_some(program);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| executable(p))
}

fn required_names() -> Vec<String> {
    std::env::var(REQUIRE_ENV)
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Checks `FRAMEBENCH_REQUIRE`: every name it lists is known, and every tool it names is here.
/// The error is one line.
pub fn check_required() -> anyhow::Result<()> {
    let names = required_names();
    if let Some(bad) = names.iter().find(|n| {
        !["all", "callgrind"].contains(&n.as_str()) && !Tool::ALL.iter().any(|t| t.name() == *n)
    }) {
        bail!(
            "{REQUIRE_ENV} names an unknown tool {bad:?} (known: all, callgrind, {})",
            Tool::ALL.map(Tool::name).join(", ")
        );
    }
    let missing: Vec<&str> = Tool::ALL
        .iter()
        .filter(|t| t.required())
        .filter_map(|t| t.path().err())
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(anyhow!("{REQUIRE_ENV} requires it: {}", missing.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_variables_are_distinct() {
        let names: HashSet<_> = Tool::ALL.iter().map(|t| t.name()).collect();
        let vars: HashSet<_> = Tool::ALL.iter().map(|t| t.env_var()).collect();
        assert_eq!(names.len(), Tool::ALL.len());
        assert_eq!(vars.len(), Tool::ALL.len());
    }

    #[test]
    fn runner_install_names_the_locked_version() {
        let v = gungraun_version();
        assert!(v.starts_with("0."), "{v}");
        assert!(Tool::Runner.install().contains(&format!("--version {v} ")));
    }

    #[test]
    fn programs_are_found_on_path_and_by_path() {
        assert!(find_program(Path::new("sh")).is_some());
        assert!(find_program(Path::new("/bin/sh")).is_some());
        assert!(find_program(Path::new("/nonexistent/sh")).is_none());
        assert!(find_program(Path::new("framebench-no-such-program")).is_none());
    }

    #[test]
    fn a_hidden_tool_says_how_to_install_it() {
        for tool in Tool::ALL {
            let why = tool
                .detect_with(Some("/nonexistent/framebench-hidden".into()))
                .unwrap_err()
                .to_string();
            assert!(
                why.contains("not found at /nonexistent/framebench-hidden"),
                "{why}"
            );
            assert!(why.contains(&tool.install()), "{why}");
            assert!(!why.contains('\n'), "{why}");
        }
        let why = Tool::Faketime
            .detect_with(Some("/nonexistent/libfaketime.so.1".into()))
            .unwrap_err()
            .to_string();
        assert!(why.starts_with("libfaketime not found"), "{why}");
        assert!(why.ends_with("`apt-get install faketime`"), "{why}");
    }

    #[test]
    fn a_runner_of_another_version_names_both() {
        let dir = std::env::temp_dir().join(format!("fb-runner-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake = dir.join("gungraun-runner");
        std::fs::write(&fake, "#!/bin/sh\necho 'gungraun-runner 0.0.1'\n").unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let why = Tool::Runner
            .detect_with(Some(fake.clone().into_os_string()))
            .unwrap_err()
            .to_string();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(why.contains("gungraun-runner 0.0.1 found"), "{why}");
        assert!(
            why.contains(&format!("gungraun is {}", gungraun_version())),
            "{why}"
        );
        assert!(
            why.contains("cargo install gungraun-runner --version"),
            "{why}"
        );
    }
}
