//! Instruction counts of in-process dispatches under callgrind: the counted call that
//! `cargo bench --bench callgrind` makes once per cell ([`count`]), and `framebench profile
//! --callgrind`, which makes it `requests` times in a process of its own under valgrind and
//! reads back where the instructions went.
//!
//! `profile --callgrind` starts `valgrind --tool=callgrind` on the `framebench-callgrind-cell`
//! binary ([`worker`]; its file says why it is not `framebench`). That process prepares the
//! cell as the bench's setup does ([`ready`]), then calls [`count`] once per request.
//! Callgrind collects only inside [`count`] (`--collect-atstart=no
//! --toggle-collect=`[`TOGGLE`]), as gungraun collects only inside the bench function that
//! calls it, so the file holds the dispatches and nothing else, and its total over `requests`
//! is the bench's figure for the cell. The environment is the bench's too: cleared (gungraun's
//! default) but for libfaketime's frozen clock and fixed random seed ([`super::faketime_env`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context as _};

use crate::framework::{Config, Entry, Request, Response};
use crate::options::Options;
use crate::oracle::Scenario;
use crate::tools::Tool;

use super::callgrind_out::Profile;
use crate::cell::Prepared;

/// The binary valgrind runs (src/bin/framebench-callgrind-cell.rs), beside `framebench`.
pub(crate) const CELL_BIN: &str = "framebench-callgrind-cell";

/// Callgrind's name for [`count`], demangled: what `--toggle-collect` matches.
pub(crate) const TOGGLE: &str = "framebench::bench::callgrind::count";

/// A prepared cell: the app, the request to count and, once counted, the response.
pub struct Cell {
    /// The checked app.
    pub(crate) prepared: Prepared,
    /// The request the next [`count`] moves into `dispatch`.
    pub(crate) request: Option<Request>,
    /// The response of the last [`count`], dropped outside it.
    pub(crate) response: Option<Response>,
}

/// Builds `entry` from `config`, checks `scenario` against the oracle (one dispatch), warms it
/// up with a second dispatch (the first may fill caches the steady state keeps) and builds the
/// request to count. Nothing here is counted.
pub fn ready(
    entry: &Entry,
    config: &Config,
    scenario: &'static Scenario,
) -> anyhow::Result<Box<Cell>> {
    let prepared = crate::cell::prepare(entry, config, scenario)?;
    prepared.warm_up()?;
    let request = Some(prepared.counted_request());
    Ok(Box::new(Cell {
        prepared,
        request,
        response: None,
    }))
}

/// The counted call: exactly one `dispatch`, and the one move of the request into it. The cell
/// comes in and goes out as a box (one pointer), so the count holds no copies of the harness's
/// own structs (it did: four `memcpy`s, 151 of `null`'s 1,190 instructions); the response and
/// the app are dropped after the benchmark, outside the count.
///
/// Out of line, so that the bench function of benches/callgrind.rs and `profile --callgrind`
/// ([`TOGGLE`]) run the same machine code: inlined into the worker's loop, the drop of the
/// empty response slot compiled to nothing, and to a call of 9 instructions in the bench.
#[inline(never)]
pub fn count(mut cell: Box<Cell>) -> Box<Cell> {
    let req = cell.request.take().expect("request");
    cell.response = Some(cell.prepared.app.dispatch(req).expect("dispatch"));
    cell
}

/// `framebench-callgrind-cell`, the process valgrind runs: [`ready`], then `requests` times
/// [`count`]. Between two counts, outside them, the last response is dropped and the next
/// request built, in the order the bench's setup has them (the warm-up's response dropped, then
/// the request built), so that each count starts from the allocator state the bench's does.
pub(crate) fn worker(
    entry: &Entry,
    config: &Config,
    scenario: &'static Scenario,
    requests: u32,
) -> anyhow::Result<()> {
    let mut cell = ready(entry, config, scenario)?;
    for i in 0..requests {
        if i > 0 {
            drop(cell.response.take());
            cell.request = Some(cell.prepared.counted_request());
        }
        cell = std::hint::black_box(count(std::hint::black_box(cell)));
    }
    Ok(())
}

/// One cell counted under callgrind.
pub(crate) struct Counted {
    /// The `callgrind.out` file, for callgrind_annotate and KCachegrind.
    pub(crate) file: PathBuf,
    /// What it holds.
    pub(crate) profile: Profile,
    /// Dispatches counted.
    pub(crate) requests: u32,
    /// Whether the clock was frozen (libfaketime found).
    pub(crate) faketime: bool,
    /// The cell's options.
    pub(crate) options: Options,
}

impl Counted {
    /// Instructions per request.
    pub(crate) fn per_request(&self) -> f64 {
        self.profile.total as f64 / f64::from(self.requests)
    }
}

/// Where `profile --callgrind` writes its files: `target/framebench-profile/` (or under
/// `CARGO_TARGET_DIR`).
pub(crate) fn out_dir() -> PathBuf {
    crate::env::target_dir().join("framebench-profile")
}

/// Counts `requests` dispatches of `entry` × `scenario` with `options` under the valgrind at
/// `valgrind`, writes `callgrind.out.<framework>.<scenario>.<logging>.<io>` in [`out_dir`] and
/// reads it back.
pub(crate) fn run(
    valgrind: &Path,
    entry: &Entry,
    scenario: &'static Scenario,
    options: Options,
    requests: u32,
) -> anyhow::Result<Counted> {
    let dir = out_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let file = dir.join(format!(
        "callgrind.out.{}.{}.{}.{}",
        entry.name, scenario.name, options.logging, options.io
    ));
    let _ = std::fs::remove_file(&file);
    let exe = std::env::current_exe()
        .context("locating this binary")?
        .with_file_name(CELL_BIN);
    anyhow::ensure!(
        exe.is_file(),
        "{} not found: `cargo build --release` builds it beside framebench (`cargo run` does not)",
        exe.display()
    );
    let (mut cmd, faketime) =
        callgrind_command(valgrind, &exe, &file, entry, scenario, options, requests);
    let out = cmd
        .output()
        .with_context(|| format!("starting {}", valgrind.display()))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("=="))
            .collect();
        bail!(
            "{} {} under callgrind: {}: {}",
            entry.name,
            scenario.name,
            out.status,
            tail[tail.len().saturating_sub(3)..].join(" | ")
        );
    }
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    let profile = Profile::parse(&text, TOGGLE).with_context(|| file.display().to_string())?;
    anyhow::ensure!(
        profile.total > 0,
        "{}: nothing was counted inside {TOGGLE}",
        file.display()
    );
    Ok(Counted {
        file,
        profile,
        requests,
        faketime,
        options,
    })
}

/// The command that runs the callgrind cell binary `exe` under `valgrind`, counting inside
/// [`TOGGLE`] into `file`, in an empty environment but for the fixtures (and faketime's, when
/// it is installed: the second value says whether it is).
fn callgrind_command(
    valgrind: &Path,
    exe: &Path,
    file: &Path,
    entry: &Entry,
    scenario: &Scenario,
    options: Options,
    requests: u32,
) -> (Command, bool) {
    let mut cmd = Command::new(valgrind);
    cmd.args([
        "--tool=callgrind",
        "--collect-atstart=no",
        &format!("--toggle-collect={TOGGLE}"),
    ])
    .arg(format!("--callgrind-out-file={}", file.display()))
    .arg(exe)
    .args([
        "--build",
        crate::env::BUILD,
        entry.name,
        scenario.name,
        "--logging",
        &options.logging.to_string(),
        "--io",
        &options.io.to_string(),
        "--requests",
        &requests.to_string(),
    ])
    .env_clear()
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    // The fixtures where this process reads them; nothing else of this environment.
    cmd.env(
        crate::fixtures::FIXTURES_ENV,
        crate::fixtures::Fixtures::default_dir(),
    );
    let faketime = match Tool::Faketime.path() {
        Ok(faketime) => {
            cmd.envs(super::faketime_env(faketime));
            true
        }
        Err(_) => {
            Tool::Faketime.skip();
            false
        }
    };
    (cmd, faketime)
}

/// At most this many characters of a function's name are printed (generic Rust names run to
/// hundreds); the file keeps them whole.
const NAME_WIDTH: usize = 150;

/// `name`, cut to [`NAME_WIDTH`] characters with `…`.
pub(crate) fn shorten(name: &str) -> String {
    if name.chars().count() <= NAME_WIDTH {
        return name.to_owned();
    }
    let mut out: String = name.chars().take(NAME_WIDTH - 1).collect();
    out.push('…');
    out
}

/// `+12`, `−3`, `0`: a difference with its sign.
fn signed(x: f64) -> String {
    let text = crate::units::fmt_count(x);
    if x.round() > 0.0 {
        format!("+{text}")
    } else {
        text
    }
}

/// The first line of a counted cell: what was counted, and the figure per request.
fn headline(entry: &Entry, scenario: &Scenario, counted: &Counted) -> String {
    format!(
        "{} {} {}: {} instructions per request ({} dispatches under callgrind, clock {})",
        entry.name,
        scenario.name,
        counted.options.label(),
        crate::units::fmt_count(counted.per_request()),
        counted.requests,
        if counted.faketime {
            "frozen by libfaketime"
        } else {
            "not frozen"
        }
    )
}

/// `profile --callgrind`'s table: the `top` functions by inclusive instructions per request,
/// with their self instructions.
pub(crate) fn render_top(
    entry: &Entry,
    scenario: &Scenario,
    counted: &Counted,
    top: usize,
) -> String {
    use crate::units::fmt_count;
    let per = f64::from(counted.requests);
    let mut rows: Vec<(&String, u64)> = counted
        .profile
        .inclusive
        .iter()
        .map(|(f, &n)| (f, n))
        .collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    let mut out = format!(
        "{}\nwrote {} (callgrind_annotate and kcachegrind read it)\n{:>10} {:>10}  function, \
         top {top} by inclusive instructions per request\n",
        headline(entry, scenario, counted),
        counted.file.display(),
        "inclusive",
        "self",
    );
    for (f, n) in rows.into_iter().take(top) {
        let own = counted.profile.exclusive.get(f).copied().unwrap_or(0);
        out += &format!(
            "{:>10} {:>10}  {}\n",
            fmt_count(n as f64 / per),
            fmt_count(own as f64 / per),
            shorten(f)
        );
    }
    out
}

/// Of per-function differences sorted largest first ([`Profile::difference`]), the `top`
/// largest each way: the largest gains first, the largest savings last.
pub(crate) fn each_way(diff: &[(String, f64)], top: usize) -> Vec<(String, f64)> {
    let up = diff.iter().filter(|(_, d)| *d > 0.0).take(top);
    let down: Vec<_> = diff
        .iter()
        .rev()
        .filter(|(_, d)| *d < 0.0)
        .take(top)
        .collect();
    up.chain(down.into_iter().rev()).cloned().collect()
}

/// `profile --callgrind --against`'s table: per function, the self instructions per request
/// that `a` spends beyond `b` (self costs, so that the rows sum to the difference of the
/// totals): the `top` largest each way, the rest in one line, and the total.
pub(crate) fn render_difference(
    (a_entry, a): (&Entry, &Counted),
    (b_entry, b): (&Entry, &Counted),
    scenario: &Scenario,
    top: usize,
) -> String {
    let diff = a
        .profile
        .difference(f64::from(a.requests), &b.profile, f64::from(b.requests));
    let mut out = format!(
        "{}\n{}\nwrote {} and {}\nself instructions per request that {} spends beyond {}, by \
         function:\n",
        headline(a_entry, scenario, a),
        headline(b_entry, scenario, b),
        a.file.display(),
        b.file.display(),
        a_entry.name,
        b_entry.name,
    );
    let mut shown = 0.0;
    let mut listed = 0usize;
    for (f, d) in &each_way(&diff, top) {
        out += &format!("{:>10}  {}\n", signed(*d), shorten(f));
        shown += d;
        listed += 1;
    }
    let total = a.per_request() - b.per_request();
    if diff.len() > listed {
        out += &format!(
            "{:>10}  the other {} functions that differ\n",
            signed(total - shown),
            diff.len() - listed
        );
    }
    out += &format!(
        "{:>10}  total: {} {} − {} {}\n",
        signed(total),
        a_entry.name,
        crate::units::fmt_count(a.per_request()),
        b_entry.name,
        crate::units::fmt_count(b.per_request())
    );
    out
}
