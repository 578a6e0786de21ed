//! A bench binary's run, recorded for `framebench report`: criterion's and gungraun's files have
//! no field of ours, so each bench target writes `<target>/<tool>/framebench-run-<bench>.json`
//! when it starts measuring ([`record_run`]) and again when it ends ([`BenchRun::finish`]): the
//! build, the window and the machine ([`crate::provenance`]). src/report/builds.rs matches each
//! cell to its run.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::env::Environment;
use crate::provenance::{Provenance, Window};

/// The schema of a bench run's file ([`BenchRun`]).
pub(crate) const RUN_SCHEMA: &str = "framebench-run/1";

/// The file a bench binary writes when it starts measuring ([`run_path`] names the bench
/// target): its `schema` ([`RUN_SCHEMA`]), and the build, window and machine as every file of
/// framebench's own says them.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct RunRecord {
    pub(crate) schema: String,
    /// A run that never said it ended (gungraun's targets have no hook after their last
    /// benchmark) ends where it started.
    pub(crate) provenance: Provenance,
    pub(crate) environment: Environment,
}

impl crate::versioned::Versioned for RunRecord {
    const SCHEMAS: &'static [&'static str] = &[RUN_SCHEMA];
    const WHAT: &'static str = "a framebench bench run file";
    const HOW: &'static str = "run the bench again (`cargo bench --bench NAME`)";
}

/// Where `bench` records its run, in its tool's folder (`target/criterion`, `target/gungraun`).
pub(crate) fn run_path(tool_dir: &Path, bench: &str) -> PathBuf {
    tool_dir.join(format!("framebench-run-{bench}.json"))
}

/// A bench binary's run, recorded for `framebench report` ([`record_run`]).
#[derive(Debug)]
pub struct BenchRun(Option<(PathBuf, RunRecord)>);

/// Records that the bench target `bench` of `tool` (`criterion` or `gungraun`) starts measuring
/// with this build, on this machine, now: `<target>/<tool>/framebench-run-<bench>.json`,
/// replacing the last run's. Not in criterion's test or list modes (`cargo test --benches`,
/// `cargo bench -- --test`), which measure nothing and must not claim the files of the last
/// run. A file that cannot be written is one line on stderr; the bench goes on.
pub fn record_run(tool: &str, bench: &str) -> BenchRun {
    let args: Vec<String> = std::env::args().collect();
    if !measures(&args) {
        return BenchRun(None);
    }
    let now = SystemTime::now();
    let record = RunRecord {
        schema: RUN_SCHEMA.to_owned(),
        provenance: Provenance::here(Window::new(now, now)),
        environment: Environment::current(),
    };
    let path = run_path(&crate::env::target_dir().join(tool), bench);
    write_run(&path, &record);
    BenchRun(Some((path, record)))
}

impl BenchRun {
    /// Records that the run ended now.
    pub fn finish(self) {
        if let Some((path, mut record)) = self.0 {
            let window = &mut record.provenance.window;
            *window = window.map(|w| Window::since(w.start()));
            write_run(&path, &record);
        }
    }
}

/// Whether a bench binary started with `args` measures: cargo passes `--bench` to a bench run,
/// and criterion's `--test`, `--list` and `--profile-time` record nothing of ours.
fn measures(args: &[String]) -> bool {
    let has = |flag: &str| args.iter().any(|a| a == flag);
    has("--bench") && !has("--test") && !has("--list") && !has("--profile-time")
}

fn write_run(path: &Path, record: &RunRecord) {
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| {
            let text = serde_json::to_string_pretty(record).map_err(std::io::Error::other)?;
            std::fs::write(path, text + "\n")
        });
    if let Err(e) = written {
        eprintln!(
            "warning: cannot write {} ({e}): `framebench report` will call this run's build unknown",
            path.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;
    use crate::provenance::Build;

    /// 2026-11-26 09:03:45 UTC.
    const NOV_26: u64 = 1_795_683_825;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn only_a_measuring_bench_run_is_recorded() {
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(measures(&args(&["in_process-1a2b", "--bench", "axum"])));
        assert!(
            !measures(&args(&["in_process-1a2b"])),
            "cargo test --benches"
        );
        assert!(!measures(&args(&["in_process-1a2b", "--bench", "--test"])));
        assert!(!measures(&args(&["in_process-1a2b", "--bench", "--list"])));
    }

    #[test]
    fn a_run_record_reads_back_through_its_schema() {
        let dir = std::env::temp_dir().join(format!("framebench-run-{}", std::process::id()));
        let path = run_path(&dir, "in_process");
        let record = RunRecord {
            schema: RUN_SCHEMA.into(),
            provenance: Provenance::here(Window::new(at(NOV_26), at(NOV_26))),
            environment: Environment::current(),
        };
        write_run(&path, &record);
        BenchRun(Some((path.clone(), record))).finish();
        let back: RunRecord = crate::versioned::read(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(back.provenance.measured[0].build, Build::this());
        let window = back.provenance.window.unwrap();
        assert_eq!(window.start(), at(NOV_26));
        assert!(window.to_string().starts_with("26 Nov 2026 09:03"));
        assert!(
            !window.to_string().ends_with("09:03–09:03 UTC"),
            "finished now"
        );
    }
}
