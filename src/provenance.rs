//! What produced a result: the build that measured it (framebench's commit in full, and whether
//! tracked files had changed), the build that wrote the file, and the UTC window the measurement
//! ran in. Every results file (`framebench-results/1`) and `deltas --json` carry it as
//! `provenance` ([`Provenance`]); the machine is the file's `environment` beside it
//! ([`crate::env::Environment`], the one description of the machine). The report's environment
//! section prints it on lines of their own ([`Provenance::lines`]), as the quick compare's
//! screen prints its commit and window.
//!
//! A file of framebench's own is measured and written by one binary, so its two builds are the
//! same. `framebench report` joins files other binaries wrote: the benches' (criterion's and
//! gungraun's, which know nothing of framebench) and `allocs --json`'s and `deltas --json`'s. The
//! bench binaries say which build they are in a small file of their own, written when they start
//! measuring next to their tool's output ([`crate::bench::run`],
//! `target/criterion/framebench-run-<bench>.json`), because criterion's and gungraun's files
//! have no field of ours and their folders no place per cell that we could name without copying
//! their path rules (src/report/builds.rs says how a cell is matched to its run).
//!
//! The format is additive: every field here came after `framebench-results/1`, so a file without
//! `provenance` still reads, and its build is the one its environment names, or
//! [`Build::unknown`] where that is empty too ([`Source::of_file`]).

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::env::Environment;

/// One build of framebench: its commit in full and whether tracked files differed from it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct Build {
    /// `git rev-parse HEAD` at build time, or `unknown`.
    pub(crate) commit: String,
    /// Whether tracked files had changed since that commit.
    pub(crate) dirty: bool,
}

impl Build {
    /// The build of this binary.
    pub(crate) fn this() -> Self {
        Build::parse(crate::env::GIT_REVISION)
    }

    /// A build nobody recorded: an older file, a bench run without its run file.
    pub(crate) fn unknown() -> Self {
        Build {
            commit: "unknown".into(),
            dirty: false,
        }
    }

    /// The build a revision names as the environment keeps it (`<sha>`, `<sha>-dirty`);
    /// empty is unknown.
    pub(crate) fn parse(revision: &str) -> Self {
        match revision.strip_suffix("-dirty") {
            _ if revision.is_empty() => Build::unknown(),
            Some(commit) => Build {
                commit: commit.to_owned(),
                dirty: true,
            },
            None => Build {
                commit: revision.to_owned(),
                dirty: false,
            },
        }
    }

    /// Whether a commit was recorded.
    pub(crate) fn is_known(&self) -> bool {
        self.commit != "unknown"
    }
}

/// `<full sha>`, `<full sha>-dirty` or `unknown`, as `git describe --dirty` marks a tree.
impl fmt::Display for Build {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dirty = if self.dirty { "-dirty" } else { "" };
        write!(f, "{}{dirty}", self.commit)
    }
}

/// The UTC window a measurement ran in; in files, as unix seconds (`{"start": …, "end": …}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Seconds", into = "Seconds")]
pub(crate) struct Window {
    start: SystemTime,
    end: SystemTime,
}

/// A [`Window`] as a file keeps it.
#[derive(Serialize, Deserialize)]
struct Seconds {
    start: u64,
    end: u64,
}

impl From<Window> for Seconds {
    fn from(w: Window) -> Self {
        let secs = |t: SystemTime| t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        Seconds {
            start: secs(w.start),
            end: secs(w.end),
        }
    }
}

impl From<Seconds> for Window {
    fn from(s: Seconds) -> Self {
        let at = |secs: u64| UNIX_EPOCH + Duration::from_secs(secs);
        Window::new(at(s.start), at(s.end))
    }
}

impl Window {
    /// From `start` until now.
    pub(crate) fn since(start: SystemTime) -> Self {
        Window::new(start, SystemTime::now())
    }

    /// From `start` to `end` (in either order).
    pub(crate) fn new(start: SystemTime, end: SystemTime) -> Self {
        Self {
            start: start.min(end),
            end: start.max(end),
        }
    }

    /// When it began.
    pub(crate) fn start(&self) -> SystemTime {
        self.start
    }

    /// The window that holds both.
    pub(crate) fn union(self, other: Window) -> Self {
        Window::new(self.start.min(other.start), self.end.max(other.end))
    }

    /// This window, stretched to hold `at`.
    pub(crate) fn reaching(self, at: SystemTime) -> Self {
        self.union(Window::new(at, at))
    }
}

/// `26 Nov 2026 09:03–09:10 UTC`; across midnight, each end with its date.
impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (start_date, start_time) = date_and_minute(self.start);
        let (end_date, end_time) = date_and_minute(self.end);
        if start_date == end_date {
            write!(f, "{start_date} {start_time}–{end_time} UTC")
        } else {
            write!(f, "{start_date} {start_time} – {end_date} {end_time} UTC")
        }
    }
}

/// (`26 Nov 2026`, `09:03`) for `at`, from its HTTP date (`Thu, 26 Nov 2026 09:03:45 GMT`):
/// httpdate is already a dependency and prints UTC; no calendar code of our own.
fn date_and_minute(at: SystemTime) -> (String, String) {
    let text = httpdate::fmt_http_date(at);
    let words: Vec<&str> = text.split(' ').collect();
    match words.as_slice() {
        [_, day, month, year, time, _] => (
            format!("{day} {month} {year}"),
            time.get(..5).unwrap_or(time).to_owned(),
        ),
        _ => (text.clone(), String::new()),
    }
}

/// What produced a file: who measured, who wrote it, and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Provenance {
    /// The builds that measured, each with the sources it measured: one build (and no sources
    /// named) for a file one binary measured; several only where `report --allow-mixed` or
    /// `merge` joined sources of several.
    pub(crate) measured: Vec<MeasuredBy>,
    /// The build that wrote the file.
    pub(crate) reported: Build,
    /// When it was measured (absent where no source said).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) window: Option<Window>,
}

/// A build that measured, with what it measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct MeasuredBy {
    #[serde(flatten)]
    pub(crate) build: Build,
    /// The sources it measured, where the file joins several (`target/criterion/in_process`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) sources: Vec<String>,
}

/// One source of a file that joins others (`report`'s files, `merge`'s parts): its name, the
/// build that measured it and when.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Source {
    /// A path, or a path and the bench (`target/criterion/in_process`).
    pub(crate) name: String,
    pub(crate) build: Build,
    pub(crate) window: Option<Window>,
}

impl Source {
    /// The sources a file of framebench's own stands for, named `name`: one per build its
    /// provenance names. A file written before provenance was kept stands for the build its
    /// environment names (the binary that measured and wrote it), or an unknown one, measured
    /// when the file was `written`.
    pub(crate) fn of_file(
        name: &str,
        provenance: Option<&Provenance>,
        environment: &Environment,
        written: Option<SystemTime>,
    ) -> Vec<Source> {
        let at = written.map(|t| Window::new(t, t));
        match provenance {
            Some(p) => p
                .measured
                .iter()
                .map(|m| Source {
                    name: name.to_owned(),
                    build: m.build.clone(),
                    window: p.window.or(at),
                })
                .collect(),
            None => vec![Source {
                name: name.to_owned(),
                build: Build::parse(&environment.git_revision),
                window: at,
            }],
        }
    }
}

impl Provenance {
    /// Measured and written by this binary in `window`.
    pub(crate) fn here(window: Window) -> Self {
        Provenance {
            measured: vec![MeasuredBy {
                build: Build::this(),
                sources: Vec::new(),
            }],
            reported: Build::this(),
            window: Some(window),
        }
    }

    /// [`Provenance::lines`] of a file this binary measured and wrote in `window`, each line a
    /// paragraph of its own: the header of the generated Markdown files (the quick compare's
    /// screen, the conformance report).
    pub(crate) fn header(window: Window) -> String {
        Provenance::here(window).lines().join("\n\n")
    }

    /// Written by this binary from `sources`: their builds, known ones first in the order met,
    /// each naming its sources (unless one build measured them all), and the window holding
    /// theirs.
    pub(crate) fn joined(sources: &[Source]) -> Self {
        let mut measured: Vec<MeasuredBy> = Vec::new();
        for s in sources {
            let name = s.name.clone();
            match measured.iter_mut().find(|m| m.build == s.build) {
                Some(m) if !m.sources.contains(&name) => m.sources.push(name),
                Some(_) => {}
                None => measured.push(MeasuredBy {
                    build: s.build.clone(),
                    sources: vec![name],
                }),
            }
        }
        measured.sort_by_key(|m| !m.build.is_known());
        if let [one] = measured.as_mut_slice() {
            one.sources.clear();
        }
        let window = sources
            .iter()
            .filter_map(|s| s.window)
            .reduce(Window::union);
        Provenance {
            measured,
            reported: Build::this(),
            window,
        }
    }

    /// The builds that measured and are known, each once.
    pub(crate) fn known(&self) -> Vec<&MeasuredBy> {
        self.measured
            .iter()
            .filter(|m| m.build.is_known())
            .collect()
    }

    /// `Measured at: <commit>` (a line per build, with its sources when there are several),
    /// `Reported at: <commit>` and `Window: <window>`, for a header.
    pub(crate) fn lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .measured
            .iter()
            .map(|m| match m.sources.as_slice() {
                [] => format!("Measured at: {}", m.build),
                names => format!("Measured at: {} ({})", m.build, names.join(", ")),
            })
            .collect();
        out.push(format!("Reported at: {}", self.reported));
        if let Some(w) = self.window {
            out.push(format!("Window: {w}"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-26 09:03:45 UTC.
    const NOV_26: u64 = 1_795_683_825;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    fn build(commit: &str, dirty: bool) -> Build {
        Build {
            commit: commit.into(),
            dirty,
        }
    }

    #[test]
    fn a_window_prints_its_date_once_and_both_minutes() {
        let w = Window::new(at(NOV_26), at(NOV_26 + 7 * 60));
        assert_eq!(w.to_string(), "26 Nov 2026 09:03–09:10 UTC");
    }

    #[test]
    fn a_window_across_midnight_dates_both_ends() {
        // 2026-11-26 23:58:00 UTC and 5 minutes later.
        let w = Window::new(at(1_795_737_480), at(1_795_737_480 + 5 * 60));
        assert_eq!(w.to_string(), "26 Nov 2026 23:58 – 27 Nov 2026 00:03 UTC");
    }

    #[test]
    fn a_window_is_kept_as_unix_seconds_and_reads_back() {
        let w = Window::new(at(NOV_26 + 420), at(NOV_26));
        let text = serde_json::to_string(&w).unwrap();
        assert_eq!(text, r#"{"start":1795683825,"end":1795684245}"#);
        assert_eq!(serde_json::from_str::<Window>(&text).unwrap(), w);
        let wider = w.reaching(at(NOV_26 + 3600));
        assert_eq!(wider.to_string(), "26 Nov 2026 09:03–10:03 UTC");
    }

    #[test]
    fn a_build_is_its_full_commit_marked_dirty_or_unknown() {
        let sha = "99cb315a1b2c3d4e5f60718293a4b5c6d7e8f901";
        assert_eq!(Build::parse(sha), build(sha, false));
        let dirty = Build::parse(&format!("{sha}-dirty"));
        assert_eq!(dirty, build(sha, true));
        assert_eq!(dirty.to_string(), format!("{sha}-dirty"));
        assert_eq!(Build::parse(""), Build::unknown());
        assert!(!Build::parse("").is_known() && Build::parse(sha).is_known());
        assert_eq!(Build::this().to_string(), crate::env::GIT_REVISION);
    }

    #[test]
    fn provenance_of_one_binary_reads_back_and_prints_three_lines() {
        let p = Provenance {
            window: Some(Window::new(at(NOV_26), at(NOV_26 + 420))),
            ..Provenance::here(Window::since(at(NOV_26)))
        };
        let text = serde_json::to_string(&p).unwrap();
        let c = serde_json::to_string(&Build::this().commit).unwrap();
        let dirty = Build::this().dirty;
        assert_eq!(
            text,
            format!(
                r#"{{"measured":[{{"commit":{c},"dirty":{dirty}}}],"reported":{{"commit":{c},"dirty":{dirty}}},"window":{{"start":1795683825,"end":1795684245}}}}"#
            )
        );
        assert_eq!(serde_json::from_str::<Provenance>(&text).unwrap(), p);
        assert_eq!(
            p.lines(),
            [
                format!("Measured at: {}", crate::env::GIT_REVISION),
                format!("Reported at: {}", crate::env::GIT_REVISION),
                "Window: 26 Nov 2026 09:03–09:10 UTC".to_owned(),
            ]
        );
    }

    #[test]
    fn joined_sources_name_each_build_and_the_window_holds_them_all() {
        let (a, b) = ("a".repeat(40), "b".repeat(40));
        let source = |name: &str, build: Build, from: u64, to: u64| Source {
            name: name.into(),
            build,
            window: Some(Window::new(at(from), at(to))),
        };
        let sources = [
            source("t/criterion/in_process", Build::unknown(), NOV_26, NOV_26),
            source(
                "t/gungraun/callgrind",
                build(&a, false),
                NOV_26 + 60,
                NOV_26 + 120,
            ),
            source(
                "t/allocs/allocs.json",
                build(&b, true),
                NOV_26 + 300,
                NOV_26 + 600,
            ),
            source(
                "t/deltas/deltas.json",
                build(&a, false),
                NOV_26 + 60,
                NOV_26 + 60,
            ),
        ];
        let p = Provenance::joined(&sources);
        assert_eq!(p.known().len(), 2);
        let lines = p.lines();
        assert_eq!(
            lines[..3],
            [
                format!("Measured at: {a} (t/gungraun/callgrind, t/deltas/deltas.json)"),
                format!("Measured at: {b}-dirty (t/allocs/allocs.json)"),
                "Measured at: unknown (t/criterion/in_process)".to_owned(),
            ]
        );
        assert_eq!(lines[4], "Window: 26 Nov 2026 09:03–09:13 UTC");
        let text = serde_json::to_string(&p).unwrap();
        assert!(
            text.contains(r#""sources":["t/allocs/allocs.json"]"#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<Provenance>(&text).unwrap(), p);
        // One build for every source: no source is named.
        let one = Provenance::joined(&sources[1..2]);
        assert_eq!(one.lines()[0], format!("Measured at: {a}"));
    }

    #[test]
    fn a_file_without_provenance_stands_for_the_build_its_environment_names() {
        let mut env = Environment::current();
        env.git_revision = String::new();
        let old = Source::of_file("old.json", None, &env, Some(at(NOV_26)));
        assert_eq!(old[0].build, Build::unknown());
        assert_eq!(old[0].window, Some(Window::new(at(NOV_26), at(NOV_26))));
        env.git_revision = "c".repeat(40) + "-dirty";
        let named = Source::of_file("old.json", None, &env, None);
        assert_eq!(named[0].build, build(&"c".repeat(40), true));
        let p = Provenance::here(Window::new(at(NOV_26), at(NOV_26 + 60)));
        let new = Source::of_file("new.json", Some(&p), &env, Some(at(0)));
        assert_eq!((&new[0].build, new[0].window), (&Build::this(), p.window));
    }
}
