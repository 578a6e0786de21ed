//! Sources of `framebench report` planted in a target folder as the benches leave them, and the
//! report run on them: shared by the tests of the report (tests/testsuite/bench_cli.rs,
//! tests/testsuite/provenance.rs).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `framebench report --target-dir DIR --out OUT`, then `more`.
pub(crate) fn report(dir: &Path, out: &Path, more: &[&str]) -> Output {
    let mut args = vec![
        "report",
        "--target-dir",
        dir.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(more);
    Command::new(env!("CARGO_BIN_EXE_framebench"))
        .args(&args)
        .output()
        .unwrap()
}

/// In-process hello of `null`, 42 ns (40–44), as criterion 0.8 writes its files, under target
/// folder `dir`; the cell's `new` folder.
pub(crate) fn plant_criterion_cell(dir: &Path) -> PathBuf {
    let cell = dir.join("criterion/in_process_hello/null/log=off,io=memory/new");
    std::fs::create_dir_all(&cell).unwrap();
    std::fs::write(
        cell.join("benchmark.json"),
        r#"{"group_id":"in_process/hello","function_id":"null","value_str":"log=off,io=memory","throughput":{"Bytes":13},"full_id":"in_process/hello/null/log=off,io=memory","directory_name":"in_process_hello/null/log=off,io=memory","title":"in_process/hello/null/log=off,io=memory"}"#,
    )
    .unwrap();
    std::fs::write(
        cell.join("estimates.json"),
        r#"{"mean":{"confidence_interval":{"confidence_level":0.95,"lower_bound":40.0,"upper_bound":44.0},"point_estimate":42.0,"standard_error":1.0},"median":{"confidence_interval":{"confidence_level":0.95,"lower_bound":40.0,"upper_bound":44.0},"point_estimate":41.0,"standard_error":1.0},"median_abs_dev":{"confidence_interval":{"confidence_level":0.95,"lower_bound":0.0,"upper_bound":1.0},"point_estimate":0.5,"standard_error":0.1},"slope":null,"std_dev":{"confidence_interval":{"confidence_level":0.95,"lower_bound":0.0,"upper_bound":1.0},"point_estimate":0.5,"standard_error":0.1}}"#,
    )
    .unwrap();
    cell
}

/// A gungraun summary.json as gungraun 0.20.0 writes it (version 7; some fields left out), for
/// in-process hello, logging off, `null` (its module names the benchmark function): 1,234
/// instructions.
pub(crate) const SUMMARY: &str = r#"{"version":"7","module_path":"callgrind::in_process::null","id":"hello_off","profiles":[{"tool":"Callgrind","data":{"parts":[],"total":{"metrics":{"Ir":{"change":{"diff_pct":"3","factor":"1.03"},"values":{"new":1234,"old":1200}}},"regressions":[]}}}]}"#;

/// [`SUMMARY`] under target folder `dir`, where the `callgrind` bench writes it; its folder.
pub(crate) fn plant_summary(dir: &Path) -> PathBuf {
    let cg = dir.join("gungraun/framebench/callgrind/in_process/null.hello_off");
    std::fs::create_dir_all(&cg).unwrap();
    std::fs::write(cg.join("summary.json"), SUMMARY).unwrap();
    cg
}
