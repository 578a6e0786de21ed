//! Shared by the benches (`benches/*.rs`), `framebench profile` and `framebench report`: which
//! cells are measured, a prepared and checked in-process cell and the keep-alive loopback client.
//! The loopback benches start their servers with [`crate::child`], pinned by [`crate::pinning`],
//! as the load driver does.
//!
//! Every cell is checked against the oracle here, once, before anything is timed: a cell that
//! fails is reported and skipped by the caller.

pub mod callgrind;
pub(crate) mod callgrind_out;
pub mod client;
pub(crate) mod flamegraph;
pub(crate) mod profile;
pub(crate) mod run;

pub use run::{record_run, BenchRun};

use crate::framework::Entry;
use crate::options::{Io, Options};
use crate::oracle::Scenario;

/// For the callgrind targets, before gungraun does anything: checks valgrind and
/// `gungraun-runner` at exactly the gungraun version in Cargo.lock. When one is missing or of
/// another version, prints one line per cause with the command that installs the right one and
/// ends the process with 0, so that `cargo bench` goes on to the criterion targets; with
/// `FRAMEBENCH_REQUIRE` naming the tool (or `callgrind`), with 1. When the runner is found, its
/// folder goes first on `PATH`, where gungraun looks for it.
pub fn callgrind_preflight(target: &str) {
    use crate::tools::Tool;
    if let Err(e) = crate::tools::check_required() {
        eprintln!("error: {target}: {e}");
        std::process::exit(1);
    }
    let missing: Vec<&str> = [Tool::Valgrind, Tool::Runner]
        .into_iter()
        .filter_map(|t| t.path().err())
        .collect();
    if missing.is_empty() {
        if let Ok(runner) = Tool::Runner.path() {
            if let (Some(dir), Some(path)) = (runner.parent(), std::env::var_os("PATH")) {
                let dirs = std::iter::once(dir.to_owned()).chain(std::env::split_paths(&path));
                if let Ok(joined) = std::env::join_paths(dirs) {
                    // SAFETY: called from `main` of the bench binary before any thread starts.
                    unsafe { std::env::set_var("PATH", joined) };
                }
            }
        }
        return;
    }
    for why in &missing {
        eprintln!("skipping `cargo bench --bench {target}`: {why}");
    }
    std::process::exit(0);
}

/// The environment of a counted process with libfaketime at `faketime` preloaded: a frozen
/// clock (`FAKETIME`), read once (`FAKETIME_CACHE_DURATION` longer than any run, so libfaketime
/// never re-parses it in the middle of a counted call), a fixed `getrandom` stream
/// (`FAKERANDOM_SEED`): std's `HashMap` seeds come from `getrandom`, and a different seed per
/// run hashes, probes and grows the maps of axum's router, rocket and minijinja differently),
/// and libfaketime's shared state made by this process ([`faketime_shared`]).
pub fn faketime_env(faketime: &std::path::Path) -> Vec<(&'static str, String)> {
    let mut env = vec![
        ("LD_PRELOAD", faketime.display().to_string()),
        ("FAKETIME", "2026-01-01 00:00:00".into()),
        ("FAKETIME_CACHE_DURATION", "1000000".into()),
        ("FAKERANDOM_SEED", "0x12345678DEADBEEF".into()),
    ];
    if let Some(shared) = faketime_shared() {
        env.push(("FAKETIME_SHARED", shared.to_owned()));
    }
    env
}

/// `FAKETIME_SHARED` for the counted processes: a POSIX semaphore and shared-memory segment
/// this process creates once, named after its pid padded to ten digits, and removes at exit.
///
/// Why: without it libfaketime 0.9.10 creates `/faketime_sem_<pid>` and `/faketime_shm_<pid>`
/// in every process it is preloaded into (first in valgrind's launcher, which then `exec`s and
/// never removes them), and `sem_open(O_CREAT | O_EXCL)` silently fails when a stale pair with
/// the same pid is left in /dev/shm. Whether it succeeded decides whether the counted process
/// gets `FAKETIME_SHARED` (a `setenv`, so a different heap when the count starts: nickel moved
/// by ~300 instructions, rocket by ~120) and whether every faked `clock_gettime` takes two more
/// instructions in libfaketime's `save_time`; the pid's digit count changes the name's length
/// too. With a name that exists and has the same length on every run, every counted process
/// takes the same path. `None` when the objects cannot be created (no /dev/shm): libfaketime's
/// own attempt then fails in the same way on every run.
pub(crate) fn faketime_shared() -> Option<&'static str> {
    static SHARED: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    SHARED
        .get_or_init(|| faketime_shm::create().ok())
        .as_deref()
}

/// The semaphore and shared memory behind [`faketime_shared`].
mod faketime_shm {
    use std::ffi::CString;
    use std::sync::OnceLock;

    /// The two names, kept for the `atexit` handler that removes them.
    static NAMES: OnceLock<(CString, CString)> = OnceLock::new();

    /// Creates both objects and returns libfaketime's `"<semaphore> <shared memory>"`.
    pub(super) fn create() -> std::io::Result<String> {
        let pid = std::process::id();
        let sem = format!("/framebench-faketime-sem-{pid:010}");
        let shm = format!("/framebench-faketime-shm-{pid:010}");
        let (sem_c, shm_c) = (CString::new(sem.clone())?, CString::new(shm.clone())?);
        // SAFETY: plain libc calls on valid NUL-terminated names; the semaphore handle is
        // closed before returning, the descriptor too.
        unsafe {
            // A pair with this pid can only be left by a dead process: remove it first.
            libc::sem_unlink(sem_c.as_ptr());
            libc::shm_unlink(shm_c.as_ptr());
            let handle = libc::sem_open(
                sem_c.as_ptr(),
                libc::O_CREAT | libc::O_EXCL,
                0o600 as libc::c_uint,
                1 as libc::c_uint,
            );
            if handle == libc::SEM_FAILED {
                return Err(std::io::Error::last_os_error());
            }
            libc::sem_close(handle);
            let fd = libc::shm_open(
                shm_c.as_ptr(),
                libc::O_CREAT | libc::O_EXCL | libc::O_RDWR,
                0o600,
            );
            if fd < 0 {
                let e = std::io::Error::last_os_error();
                libc::sem_unlink(sem_c.as_ptr());
                return Err(e);
            }
            // Zeroed and larger than libfaketime's `struct ft_shared_s` (a tick counter, a
            // file index and four timespecs), which each process maps; each process's start
            // time is written there at its start, outside any count.
            let sized = libc::ftruncate(fd, 4096);
            let e = std::io::Error::last_os_error();
            libc::close(fd);
            if sized != 0 {
                libc::sem_unlink(sem_c.as_ptr());
                libc::shm_unlink(shm_c.as_ptr());
                return Err(e);
            }
            if NAMES.set((sem_c, shm_c)).is_ok() {
                libc::atexit(remove);
            }
        }
        Ok(format!("{sem} {shm}"))
    }

    /// Removes both objects when this process exits (a killed run leaves two small files in
    /// /dev/shm, which the next run with the same pid removes).
    extern "C" fn remove() {
        if let Some((sem, shm)) = NAMES.get() {
            // SAFETY: valid NUL-terminated names.
            unsafe {
                libc::sem_unlink(sem.as_ptr());
                libc::shm_unlink(shm.as_ptr());
            }
        }
    }
}

/// Scenarios whose route reads a file, so `io=disk` differs from `io=memory`.
pub(crate) const IO_SCENARIOS: &[&str] = &["static", "paste"];

/// Server threads of the loopback benches (`framebench serve --threads`).
pub const LOOPBACK_THREADS: usize = 1;

/// The variants measured in-process for `entry` × `scenario`: logging off and sink, and io
/// disk only where the route reads a file. The baselines ignore options and run once.
pub fn in_process_variants(entry: &Entry, scenario: &Scenario) -> Vec<Options> {
    if entry.baseline {
        return vec![Options::default()];
    }
    Options::variants(Options::default().threads)
        .into_iter()
        .filter(|o| o.io == Io::Memory || IO_SCENARIOS.contains(&scenario.name))
        .collect()
}

/// The variant label used in bench ids: `log=off,io=memory`.
pub fn label(options: &Options) -> String {
    options.label()
}

/// Requests built, dispatched and dropped together by [`timed_batch`]: few enough that they and
/// their responses stay in the cache. The criterion in-process bench uses the same batch size.
pub const CHUNK: usize = 64;

/// Dispatches `n` requests on `app`, taking `instances` in turn (one for a fixed scenario, a
/// ring of distinct ones for a computed scenario: [`crate::cell::RING`]), and returns the time
/// the dispatch calls took.
/// The requests are built before the clock starts and the responses dropped after it stops, as
/// criterion's `iter_batched` does, and they are built [`CHUNK`] at a time: building a whole
/// batch first (120,000 requests for a 60 ms batch of `null`) left them, and the responses, out
/// of the cache by the time they were dispatched, which doubled `null`'s figure against
/// criterion's (docs/methodology/in-process.md, "The in-process timers agree"). Every in-process timer
/// (the quick compare, `framebench deltas`, `framebench profile`) measures through here.
pub(crate) fn timed_batch(
    app: &dyn crate::framework::App,
    instances: &[crate::oracle::Instance],
    n: usize,
) -> anyhow::Result<std::time::Duration> {
    anyhow::ensure!(!instances.is_empty(), "no request to time");
    let mut elapsed = std::time::Duration::ZERO;
    let mut left = n;
    let mut next = instances.iter().cycle();
    while left > 0 {
        let k = left.min(CHUNK);
        // Fresh vectors for every chunk, freed after it, in criterion's order (inputs, then
        // outputs): reusing them left glibc's allocator in another state between chunks, and
        // `null hello` read 11 % above criterion's figure for that alone (docs/methodology/in-process.md,
        // "The in-process timers agree").
        let requests: Vec<_> = next.by_ref().take(k).map(|i| i.request()).collect();
        let mut responses = Vec::with_capacity(k);
        let start = std::time::Instant::now();
        for req in requests {
            responses.push(std::hint::black_box(
                app.dispatch(std::hint::black_box(req))?,
            ));
        }
        elapsed += start.elapsed();
        drop(std::hint::black_box(responses));
        left -= k;
    }
    Ok(elapsed)
}

/// The batch size at which `time(n)` (the time of `n` requests) takes about `target`: grows
/// `n` fourfold until a batch takes a quarter of it, then scales. At least 1, at most 2²⁴.
pub(crate) fn calibrate(
    target: std::time::Duration,
    mut time: impl FnMut(usize) -> anyhow::Result<std::time::Duration>,
) -> anyhow::Result<usize> {
    let mut n = 1usize;
    loop {
        let t = time(n)?;
        if t >= target / 4 || n >= 1 << 24 {
            let per = t.as_secs_f64() / n as f64;
            return Ok(((target.as_secs_f64() / per.max(1e-9)) as usize).clamp(1, 1 << 24));
        }
        n *= 4;
    }
}
