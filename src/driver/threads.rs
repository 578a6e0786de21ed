//! The server's threads over a cell, from `/proc/<pid>/task/*`: how much of a CPU each used and
//! where each may run. `framebench scale` reads it to check that `--threads T` meant T: a server
//! is marked when more than T of its threads were busy, or when a thread may run on CPUs outside
//! the server's set ([`merged`]).

use std::collections::BTreeMap;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// A thread is busy over a cell when it used at least this share of one CPU.
pub(crate) const BUSY_PCT: f64 = 10.0;

/// Threads framebench or a framework starts beside its workers, by the start of their name (as
/// `comm` holds it: 15 bytes at most), and what they do: listed apart from the workers and not
/// counted against T.
pub(crate) const HELPERS: &[(&str, &str)] = &[
    (
        "fb-serve",
        "framebench: drives a work-stealing tokio runtime and its accept loop",
    ),
    (
        "fb-accept",
        "hyper 0.10's pool (iron, nickel): a thread per connection, as many as connections",
    ),
    ("fb-actix-system", "framebench: runs the actix System"),
    ("fb-ntex-system", "framebench: runs the ntex System"),
    ("fb-xitca-wait", "framebench: waits for the xitca server"),
    (
        "fb-parent",
        "framebench: the may-minihttp child's parent side",
    ),
    ("actix-server ac", "actix-server's accept thread"),
];

/// One thread's CPU over a window, by thread id.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    at: Instant,
    /// `(pid, tid)` → (name, nanoseconds on a CPU so far).
    tasks: BTreeMap<(u32, u32), (String, u64)>,
}

impl Snapshot {
    /// Every thread of `pid` and of the processes below it, now.
    pub(crate) fn take(pid: u32) -> Snapshot {
        let mut tasks = BTreeMap::new();
        for p in crate::proc::process_tree(pid) {
            let Ok(dir) = std::fs::read_dir(format!("/proc/{p}/task")) else {
                continue;
            };
            for task in dir.flatten() {
                let Some(tid) = task.file_name().to_str().and_then(|n| n.parse().ok()) else {
                    continue;
                };
                let read = |file: &str| std::fs::read_to_string(task.path().join(file)).ok();
                let ns = read("schedstat")
                    .and_then(|t| t.split_whitespace().next()?.parse::<u64>().ok());
                let name = read("comm").map(|n| n.trim_end().to_owned());
                if let (Some(ns), Some(name)) = (ns, name) {
                    tasks.insert((p, tid), (name, ns));
                }
            }
        }
        Snapshot {
            at: Instant::now(),
            tasks,
        }
    }

    /// The threads alive at `self` (the end of the window) with the share of one CPU each used
    /// since `before` (a thread born inside the window counts from 0), and the CPUs each may
    /// run on.
    pub(crate) fn since(&self, before: &Snapshot) -> Vec<ThreadUse> {
        let wall = self.at.duration_since(before.at).as_secs_f64().max(1e-9);
        self.tasks
            .iter()
            .map(|(&(pid, tid), (name, ns))| {
                let was = before.tasks.get(&(pid, tid)).map_or(0, |(_, ns)| *ns);
                ThreadUse {
                    name: name.clone(),
                    cpu_pct: 100.0 * ns.saturating_sub(was) as f64 / 1e9 / wall,
                    cpus: allowed(pid, tid).unwrap_or_default(),
                }
            })
            .collect()
    }
}

/// `Cpus_allowed_list` of one thread.
fn allowed(pid: u32, tid: u32) -> Option<Vec<usize>> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")).ok()?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    crate::pinning::parse_cpus(list.trim()).ok()
}

/// One thread over a cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ThreadUse {
    /// Its name (`comm`).
    pub(crate) name: String,
    /// Share of one CPU it used, %.
    pub(crate) cpu_pct: f64,
    /// CPUs it may run on.
    pub(crate) cpus: Vec<usize>,
}

/// The server's threads over one cell, against the server's T and CPU set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ThreadCheck {
    /// The T the server was given.
    pub(crate) threads: usize,
    /// Its threads that were busy ([`BUSY_PCT`]) and are not helpers, busiest first.
    pub(crate) busy: Vec<ThreadUse>,
    /// Its busy helper threads ([`HELPERS`]).
    pub(crate) helpers: Vec<ThreadUse>,
    /// Threads (any, busy or not) that may run on a CPU outside the server's set.
    pub(crate) wide: Vec<ThreadUse>,
    /// CPU (% of one) of the non-helper threads beyond the T busiest, each below
    /// [`BUSY_PCT`] or not: a pool whose work is spread thinly over many threads (tokio's
    /// blocking pool, Go's threads for blocking syscalls) shows here, not in `busy`.
    #[serde(default)]
    pub(crate) spill_pct: f64,
    /// How many threads beyond the T busiest used any CPU: a blocking pool can spread its
    /// share over hundreds, each under 1 %.
    #[serde(default)]
    pub(crate) spill_threads: usize,
    /// Their names with their counts ([`names`]).
    #[serde(default)]
    pub(crate) spill_names: String,
}

impl ThreadCheck {
    /// Sorts `used` against the server's `threads` and CPU set `cpus` (empty: not pinned, so
    /// nothing is wide).
    pub(crate) fn of(used: Vec<ThreadUse>, threads: usize, cpus: &[usize]) -> ThreadCheck {
        let mut check = ThreadCheck {
            threads,
            ..ThreadCheck::default()
        };
        let mut workers: Vec<ThreadUse> = Vec::new();
        for t in used {
            if !cpus.is_empty() && t.cpus.iter().any(|c| !cpus.contains(c)) {
                check.wide.push(t.clone());
            }
            if helper(&t.name).is_none() {
                workers.push(t.clone());
            }
            if t.cpu_pct < BUSY_PCT {
                continue;
            }
            if helper(&t.name).is_some() {
                check.helpers.push(t);
            } else {
                check.busy.push(t);
            }
        }
        workers.sort_by(|a, b| b.cpu_pct.total_cmp(&a.cpu_pct));
        let beyond = workers.get(threads..).unwrap_or_default();
        check.spill_pct = beyond.iter().map(|t| t.cpu_pct).sum();
        let used: Vec<ThreadUse> = beyond.iter().filter(|t| t.cpu_pct > 0.0).cloned().collect();
        check.spill_threads = used.len();
        check.spill_names = names(&used);
        check.busy.sort_by(|a, b| b.cpu_pct.total_cmp(&a.cpu_pct));
        check
    }
}

/// What is wrong with the server's threads over one row's rounds, one phrase per kind: more busy
/// threads than T, a thin spill of CPU beyond T, or threads that may leave the server's CPUs.
/// Empty when `--threads T` meant T. Each kind comes once, with the rounds it held in (`in 2/3
/// rounds`, left out for one round) and, where the rounds differ, the range or the most of what
/// it counts: the rounds differ in their figures, not in what is wrong.
pub(crate) fn merged(checks: &[&ThreadCheck]) -> Vec<String> {
    let n = checks.len();
    let held = |k: usize| {
        if n == 1 {
            String::new()
        } else {
            format!(" in {k}/{n} rounds")
        }
    };
    let mut out = Vec::new();
    let busy: Vec<&&ThreadCheck> = checks.iter().filter(|c| c.busy.len() > c.threads).collect();
    if let Some(worst) = busy.iter().max_by_key(|c| c.busy.len()) {
        let least = busy.iter().map(|c| c.busy.len()).min().unwrap_or(0);
        let count = if least == worst.busy.len() {
            least.to_string()
        } else {
            format!("{least}–{}", worst.busy.len())
        };
        out.push(format!(
            "{count} busy threads for T = {} ({}){}",
            worst.threads,
            names(&worst.busy),
            held(busy.len())
        ));
    }
    let spill: Vec<&&ThreadCheck> = checks
        .iter()
        .filter(|c| c.busy.len() <= c.threads && c.spill_pct >= BUSY_PCT)
        .collect();
    if let Some(worst) = spill
        .iter()
        .max_by(|a, b| a.spill_pct.total_cmp(&b.spill_pct))
    {
        let least = spill
            .iter()
            .map(|c| c.spill_pct)
            .fold(f64::INFINITY, f64::min);
        let pct = if (worst.spill_pct - least).round() == 0.0 {
            format!("{least:.0}")
        } else {
            format!("{least:.0}–{:.0}", worst.spill_pct)
        };
        out.push(format!(
            "{pct} % of a CPU in {}{} thread(s) beyond T = {} ({}){}",
            if spill.len() > 1 { "up to " } else { "" },
            spill.iter().map(|c| c.spill_threads).max().unwrap_or(0),
            worst.threads,
            worst.spill_names,
            held(spill.len())
        ));
    }
    let wide: Vec<&&ThreadCheck> = checks.iter().filter(|c| !c.wide.is_empty()).collect();
    if let Some(worst) = wide.iter().max_by_key(|c| c.wide.len()) {
        out.push(format!(
            "{} thread(s) may run outside the server's CPUs ({}){}",
            worst.wide.len(),
            names(&worst.wide),
            held(wide.len())
        ));
    }
    out
}

/// What a helper thread does, by its name.
pub(crate) fn helper(name: &str) -> Option<&'static str> {
    HELPERS
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map(|(_, what)| *what)
}

/// `fb-tokio ×8, fb-serve` style: thread names with their counts.
pub(crate) fn names(threads: &[ThreadUse]) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for t in threads {
        *counts.entry(t.name.as_str()).or_default() += 1;
    }
    counts
        .into_iter()
        .map(|(n, c)| {
            if c == 1 {
                n.to_owned()
            } else {
                format!("{n} ×{c}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    /// A planted server: this test process runs three busy threads beside its idle ones. Read
    /// from /proc like any server, it has three busy threads, so at T = 1 it is marked, and at
    /// T = 3 it is not.
    #[test]
    fn a_server_with_more_busy_threads_than_t_is_marked() {
        let stop = Arc::new(AtomicBool::new(false));
        let busy: Vec<_> = (0..3)
            .map(|i| {
                let stop = Arc::clone(&stop);
                std::thread::Builder::new()
                    .name(format!("planted-{i}"))
                    .spawn(move || {
                        let mut x = 0u64;
                        while !stop.load(Ordering::Relaxed) {
                            x = std::hint::black_box(x.wrapping_add(1));
                        }
                    })
                    .unwrap()
            })
            .collect();
        let before = Snapshot::take(std::process::id());
        std::thread::sleep(Duration::from_millis(600));
        let after = Snapshot::take(std::process::id());
        stop.store(true, Ordering::Relaxed);
        for t in busy {
            t.join().unwrap();
        }
        let used = after.since(&before);
        let planted: Vec<&ThreadUse> = used
            .iter()
            .filter(|t| t.name.starts_with("planted-"))
            .collect();
        assert_eq!(planted.len(), 3, "{used:?}");
        // Three busy loops on however many CPUs the test may use (two here, beside other
        // tests): each gets well over 10 % of one.
        assert!(planted.iter().all(|t| t.cpu_pct >= BUSY_PCT), "{planted:?}");
        let at_one = ThreadCheck::of(used.clone(), 1, &[]);
        let marks = merged(&[&at_one]);
        assert_eq!(marks.len(), 1, "{marks:?}");
        assert!(marks[0].contains("busy threads for T = 1"), "{marks:?}");
        assert!(marks[0].contains("planted-0"), "{marks:?}");
        assert!(at_one.busy.len() >= 3);
        // The planted threads alone at T = 3 (the test harness's other threads, which run other
        // tests beside this one, left out): nothing to mark.
        let planted: Vec<ThreadUse> = planted.into_iter().cloned().collect();
        let at_three = ThreadCheck::of(planted, 3, &[]);
        assert!(merged(&[&at_three]).is_empty());
    }

    #[test]
    fn helpers_are_listed_apart_and_wide_threads_are_marked() {
        let t = |name: &str, pct: f64, cpus: &[usize]| ThreadUse {
            name: name.into(),
            cpu_pct: pct,
            cpus: cpus.to_vec(),
        };
        let used = vec![
            t("fb-tokio", 90.0, &[0, 1]),
            t("fb-tokio", 85.0, &[0, 1]),
            t("fb-serve", 15.0, &[0, 1]),
            t("fb-tokio", 2.0, &[0, 1]),
        ];
        let check = ThreadCheck::of(used.clone(), 2, &[0, 1]);
        assert_eq!(check.busy.len(), 2);
        assert_eq!(check.helpers.len(), 1);
        assert!(merged(&[&check]).is_empty());
        // A pool spread thinly: no thread busy on its own beyond T = 1, but 4 × 6 % beside it.
        let mut thin = vec![t("fb-tokio", 60.0, &[0])];
        thin.extend((0..4).map(|_| t("fb-tokio", 6.0, &[0])));
        let check = ThreadCheck::of(thin, 1, &[0]);
        assert_eq!(check.busy.len(), 1);
        assert_eq!(
            merged(&[&check]),
            vec!["24 % of a CPU in 4 thread(s) beyond T = 1 (fb-tokio ×4)"]
        );
        let mut wide = used;
        wide[3].cpus = vec![0, 1, 2, 3];
        let check = ThreadCheck::of(wide, 2, &[0, 1]);
        assert_eq!(merged(&[&check]).len(), 1);
        assert!(merged(&[&check])[0].contains("outside the server's CPUs"));
        assert_eq!(names(&check.busy), "fb-tokio ×2");
    }

    /// A blocking pool spread over many threads, each under 1 % (tokio's, reading files): the
    /// mark counts and names them all, and the rounds of a row give one line, with the range.
    #[test]
    fn a_thin_spill_is_counted_and_the_rounds_merge_into_one_line() {
        let t = |name: &str, pct: f64| ThreadUse {
            name: name.into(),
            cpu_pct: pct,
            cpus: vec![0],
        };
        let round = |each: f64| {
            let mut used = vec![t("fb-tokio", 60.0)];
            used.extend((0..40).map(|_| t("tokio-runtime-w", each)));
            used.push(t("idle", 0.0));
            ThreadCheck::of(used, 1, &[0])
        };
        let (a, b, quiet) = (round(0.9), round(0.5), round(0.1));
        assert_eq!(
            merged(&[&a]),
            vec!["36 % of a CPU in 40 thread(s) beyond T = 1 (tokio-runtime-w ×40)"]
        );
        assert_eq!(
            merged(&[&a, &b, &quiet]),
            vec![
                "20–36 % of a CPU in up to 40 thread(s) beyond T = 1 (tokio-runtime-w ×40) \
                 in 2/3 rounds"
            ]
        );
        assert!(merged(&[&quiet]).is_empty());
    }
}
