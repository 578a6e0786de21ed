//! Linux process plumbing: CPU time and peak RSS read from `/proc/<pid>`, for a process and
//! every process below it. The driver meters its server and client with it, `serve --stats`
//! itself, and the thread check walks the same process tree.

use std::time::Instant;

/// `pid` and every process below it (a `framebench serve` of a Go peer runs the Go server as
/// its child: the server's CPU and memory are the whole tree's).
pub(crate) fn process_tree(pid: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(child) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some(ppid) = stat_fields(child).and_then(|f| f.get(1)?.parse().ok()) {
                parents.push((child, ppid));
            }
        }
    }
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(
            parents
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(c, _)| *c),
        );
        i += 1;
    }
    tree
}

/// The processes that serve for the `framebench serve` process `pid`: itself, or, when it runs
/// its server as a child (the Go peers, may-minihttp), that child and its own. `true` when the
/// server is the serve process itself.
pub(crate) fn serving(pid: u32) -> (Vec<u32>, bool) {
    let tree = process_tree(pid);
    if tree.len() > 1 {
        (tree[1..].to_vec(), false)
    } else {
        (tree, true)
    }
}

/// The fields of `/proc/<pid>/stat` after the command name (which is in parentheses and may
/// hold spaces): index 0 is the state, 1 the parent pid, 11 and 12 utime and stime.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// CPU time of one process, user and system separately.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct CpuTimes {
    /// Seconds in user mode: the program's own code (a framework's, for a server).
    pub(crate) user: f64,
    /// Seconds in the kernel on its behalf: syscalls, and for a socket server most of the TCP
    /// stack's work.
    pub(crate) system: f64,
    /// Seconds on a CPU in all, from the scheduler's nanosecond clock (`schedstat` of every
    /// thread); `user` and `system` come in clock ticks and only split it. 0 when unavailable.
    pub(crate) runtime: f64,
}

impl CpuTimes {
    /// Seconds on a CPU: the scheduler's figure when there is one, else user plus system.
    pub(crate) fn total(self) -> f64 {
        if self.runtime > 0.0 {
            self.runtime
        } else {
            self.user + self.system
        }
    }

    /// User and system seconds scaled to [`CpuTimes::total`], or `None` when no tick fell in
    /// the window (a window of a few ticks cannot be split).
    pub(crate) fn split(self) -> Option<(f64, f64)> {
        let ticks = self.user + self.system;
        (ticks > 0.0).then(|| {
            let scale = self.total() / ticks;
            (self.user * scale, self.system * scale)
        })
    }

    fn add(self, other: CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user + other.user,
            system: self.system + other.system,
            runtime: self.runtime + other.runtime,
        }
    }

    fn since(self, earlier: CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user - earlier.user,
            system: self.system - earlier.system,
            runtime: self.runtime - earlier.runtime,
        }
    }
}

/// Nanoseconds on a CPU of every thread of `pid`, from `/proc/<pid>/task/*/schedstat`. /proc's
/// utime and stime count 10 ms ticks: over a 150 ms cell that is ±7 %, enough to move a cell
/// across the 90 % saturation line; the scheduler's clock is exact. A thread that ended inside
/// the window takes its schedstat with it (servers keep their threads), so for this process,
/// whose load threads end with their cell before the driver reads its meter, the figure is
/// `getrusage(RUSAGE_SELF)`: the same clock in microseconds, ended threads included.
fn runtime_seconds(pid: u32) -> Option<f64> {
    if pid == std::process::id() {
        return own_runtime_seconds();
    }
    let mut ns = 0u64;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let path = task.path().join("schedstat");
        if let Some(v) = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| t.split_whitespace().next()?.parse::<u64>().ok())
        {
            ns += v;
        }
    }
    Some(ns as f64 / 1e9)
}

/// This process's seconds on a CPU, every thread it ever ran included.
fn own_runtime_seconds() -> Option<f64> {
    // SAFETY: getrusage writes the struct it is given, which outlives the call.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return None;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(secs(usage.ru_utime) + secs(usage.ru_stime))
}

/// CPU time of one process: user and system from `/proc/<pid>/stat` (in clock ticks, 10 ms on
/// most kernels), the total from its threads' `schedstat` ([`CpuTimes::runtime`]).
pub(crate) fn cpu_times(pid: u32) -> Option<CpuTimes> {
    let fields = stat_fields(pid)?;
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Some(CpuTimes {
        user: utime / hz,
        system: stime / hz,
        runtime: runtime_seconds(pid).unwrap_or(0.0),
    })
}

/// [`cpu_times`] of a process and all its descendants (a server and its children).
pub(crate) fn tree_cpu_times(pid: u32) -> Option<CpuTimes> {
    process_tree(pid)
        .into_iter()
        .filter_map(cpu_times)
        .reduce(CpuTimes::add)
}

/// Peak resident set (VmHWM) of a process plus that of each of its descendants, in bytes (an
/// upper bound when their peaks did not coincide).
pub(crate) fn peak_rss(pid: u32) -> Option<u64> {
    let mut total = None;
    for p in process_tree(pid) {
        let Ok(status) = std::fs::read_to_string(format!("/proc/{p}/status")) else {
            continue;
        };
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        *total.get_or_insert(0) += kb * 1024;
    }
    total
}

/// CPU use of a process between two points in time.
pub(crate) struct CpuMeter {
    pid: u32,
    tree: bool,
    start: Option<(CpuTimes, Instant)>,
}

/// What a [`CpuMeter`] measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct CpuUse {
    /// CPU time used, user and system.
    pub(crate) times: CpuTimes,
    /// Wall-clock seconds it was measured over.
    pub(crate) wall: f64,
}

impl CpuUse {
    /// User plus system, as a percentage of one core.
    pub(crate) fn percent(&self) -> f64 {
        100.0 * self.times.total() / self.wall
    }
}

impl CpuMeter {
    /// Starts measuring `pid` alone now (the driver itself: its children are servers).
    pub(crate) fn start(pid: u32) -> Self {
        let meter = CpuMeter {
            pid,
            tree: false,
            start: None,
        };
        meter.started()
    }

    /// Starts measuring `pid` and its descendants now (a server, whose work may be done by a
    /// child process, as for the Go peers).
    pub(crate) fn start_tree(pid: u32) -> Self {
        let meter = CpuMeter {
            pid,
            tree: true,
            start: None,
        };
        meter.started()
    }

    fn times(&self) -> Option<CpuTimes> {
        if self.tree {
            tree_cpu_times(self.pid)
        } else {
            cpu_times(self.pid)
        }
    }

    fn started(mut self) -> Self {
        self.start = self.times().map(|t| (t, Instant::now()));
        self
    }

    /// CPU used since [`CpuMeter::start`].
    pub(crate) fn used(&self) -> Option<CpuUse> {
        let (t0, i0) = self.start?;
        let t1 = self.times()?;
        let wall = i0.elapsed().as_secs_f64();
        (wall > 0.0).then(|| CpuUse {
            times: t1.since(t0),
            wall,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_proc() {
        let pid = std::process::id();
        assert!(cpu_times(pid).is_some_and(|t| t.total() > 0.0));
        // A child that burns user time: the meter sees it as user time, not system time. A
        // process of its own, one thread that never exits: this test process's threads come
        // and go with the other tests (a thread that exits takes its schedstat with it), and a
        // loop bounded by wall time gets less CPU than that when the two cores are busy.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let meter = CpuMeter::start(child.id());
        let deadline = Instant::now() + std::time::Duration::from_secs(20);
        while meter.used().is_none_or(|u| u.times.runtime < 0.3) && Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let used = meter.used();
        let _ = child.kill();
        let _ = child.wait();
        let used = used.unwrap();
        assert!(used.times.user > 0.1, "{used:?}");
        assert!(used.times.user > used.times.system, "{used:?}");
        // The scheduler's clock saw the 300 ms waited for, and the split is scaled to it.
        assert!(used.times.runtime >= 0.3, "{used:?}");
        let (user, system) = used.times.split().unwrap();
        assert!(user > 0.2, "{used:?}");
        assert!(
            (user + system - used.times.total()).abs() < 1e-9,
            "{used:?}"
        );
        assert!(peak_rss(pid).unwrap() > 0);
    }

    /// The driver's own meter keeps the time of a thread that ended inside the window: the load
    /// threads of a cell end before the driver reads it.
    #[test]
    fn own_meter_keeps_ended_threads() {
        let meter = CpuMeter::start(std::process::id());
        std::thread::spawn(|| {
            let until = Instant::now() + std::time::Duration::from_millis(300);
            let mut n = 0u64;
            while Instant::now() < until {
                n = std::hint::black_box(n.wrapping_add(1));
            }
        })
        .join()
        .unwrap();
        let used = meter.used().unwrap();
        // The thread ran for 300 ms of wall time; on a loaded 2-core machine it gets less CPU
        // than that, but far more than the nothing an ended thread leaves in schedstat.
        assert!(used.times.total() > 0.1, "{used:?}");
    }

    #[test]
    fn tree_includes_children() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let tree = process_tree(std::process::id());
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(tree[0], std::process::id());
        assert!(tree.contains(&child.id()), "{tree:?} lacks {}", child.id());
    }
}

/// What the kernel says a set of processes holds in memory now, from
/// `/proc/<pid>/smaps_rollup`: resident pages (RSS), and the same with each shared page divided
/// among the processes that map it (PSS).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Resident {
    /// Resident bytes.
    pub(crate) rss: u64,
    /// Proportional resident bytes.
    pub(crate) pss: u64,
}

/// [`Resident`] summed over `pids`; `None` when one of them cannot be read (gone, or not ours).
pub(crate) fn resident(pids: &[u32]) -> Option<Resident> {
    let mut total = Resident::default();
    for pid in pids {
        let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
        let kib = |key: &str| -> Option<u64> {
            let line = text.lines().find(|l| l.starts_with(key))?;
            line[key.len()..].split_whitespace().next()?.parse().ok()
        };
        total.rss += kib("Rss:")? * 1024;
        total.pss += kib("Pss:")? * 1024;
    }
    Some(total)
}

/// Raises this process's soft limit on open files to at least `need` (its children inherit
/// it), up to the hard limit. Returns the soft limit now; the error says in one line why it
/// stays below `need`.
pub(crate) fn raise_open_files(need: u64) -> Result<u64, String> {
    // SAFETY: getrlimit and setrlimit read and write the struct they are given.
    let mut limit: libc::rlimit = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err("cannot read the limit on open files (getrlimit)".to_owned());
    }
    if limit.rlim_cur >= need {
        return Ok(limit.rlim_cur);
    }
    if limit.rlim_max < need {
        return Err(format!(
            "the hard limit on open files is {}, below the {need} needed (raise it: \
             `ulimit -Hn {need}` as root, or `LimitNOFILE=` for a service)",
            limit.rlim_max
        ));
    }
    limit.rlim_cur = need;
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
        return Err(format!(
            "cannot raise the limit on open files to {need} (setrlimit)"
        ));
    }
    Ok(need)
}
