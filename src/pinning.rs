//! Where the server and the client run: taskset-style CPU lists (`0,2-3`), the [`Pinning`] of a
//! measurement, and pinning with `sched_setaffinity`. The load driver, the quick compare and the
//! loopback benches all pin through here; a child server is pinned as it starts
//! ([`crate::child`]).

use serde::{Deserialize, Serialize};

/// Where the server and the client run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pinning {
    /// Server CPUs (empty: not pinned).
    pub server_cpus: Vec<usize>,
    /// Client CPUs (empty: not pinned).
    pub client_cpus: Vec<usize>,
    /// Client threads.
    pub(crate) client_threads: usize,
}

impl Pinning {
    /// Defaults: with two or more CPUs, the first half for the server and the rest for the
    /// client (on 2 cores: server on CPU 0, client on CPU 1); one client thread per client CPU.
    pub(crate) fn resolve(
        server: Option<Vec<usize>>,
        client: Option<Vec<usize>>,
        threads: Option<usize>,
    ) -> Pinning {
        let all = allowed_cpus();
        let half = all.len() / 2;
        let server_cpus = server.unwrap_or_else(|| {
            if all.len() >= 2 {
                all[..half].to_vec()
            } else {
                Vec::new()
            }
        });
        let client_cpus = client.unwrap_or_else(|| {
            if all.len() >= 2 {
                all[half..].to_vec()
            } else {
                Vec::new()
            }
        });
        let client_threads = threads.unwrap_or(client_cpus.len().max(1));
        Pinning {
            server_cpus,
            client_cpus,
            client_threads,
        }
    }

    /// One core each, for a one-thread server and a one-thread client (the loopback benches):
    /// with two or more CPUs, the server on the first and the client on the second; else not
    /// pinned.
    pub fn one_core_each() -> Pinning {
        let (server_cpus, client_cpus) = match allowed_cpus()[..] {
            [server, client, ..] => (vec![server], vec![client]),
            _ => (Vec::new(), Vec::new()),
        };
        Pinning {
            server_cpus,
            client_cpus,
            client_threads: 1,
        }
    }

    /// Cores a server with `threads` workers can keep busy: its CPUs (all this process may use
    /// when not pinned), or its threads if fewer.
    pub(crate) fn server_cores(&self, threads: usize) -> usize {
        cores(&self.server_cpus).min(threads.max(1))
    }

    /// Cores the client threads can keep busy.
    pub(crate) fn client_cores(&self) -> usize {
        cores(&self.client_cpus).min(self.client_threads.max(1))
    }

    /// `each server pinned to CPU 0, this client to CPU 1`, or `not pinned (one CPU)`: what a
    /// command that starts one server at a time and pins itself as their client
    /// (`memory`, `startup`) says of [`Pinning::one_core_each`].
    pub(crate) fn servers_and_client(&self) -> String {
        if self.server_cpus.is_empty() {
            "not pinned (one CPU)".to_owned()
        } else {
            format!(
                "each server pinned to CPU {}, this client to CPU {}",
                format_cpus(&self.server_cpus),
                format_cpus(&self.client_cpus)
            )
        }
    }

    /// `server on cpu 0, client on cpu 1 (1 thread)`.
    pub(crate) fn label(&self) -> String {
        format!(
            "server on cpu {}, client on cpu {} ({} thread{})",
            format_cpus(&self.server_cpus),
            format_cpus(&self.client_cpus),
            self.client_threads,
            if self.client_threads == 1 { "" } else { "s" }
        )
    }
}

/// The number of CPUs in `cpus`; empty means not pinned, so every CPU this process may use.
fn cores(cpus: &[usize]) -> usize {
    if cpus.is_empty() {
        allowed_cpus().len().max(1)
    } else {
        cpus.len()
    }
}

/// Parses a taskset-style CPU list: `1`, `0,2`, `0-3,6`.
pub(crate) fn parse_cpus(text: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim) {
        let bad = || format!("bad CPU list {text:?} (want e.g. 0 or 0,2 or 0-3)");
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let a: usize = a.parse().map_err(|_| bad())?;
        let b: usize = b.parse().map_err(|_| bad())?;
        if a > b || b >= 1024 {
            return Err(bad());
        }
        out.extend(a..=b);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// `0-1,3` style text for a list.
pub fn format_cpus(cpus: &[usize]) -> String {
    if cpus.is_empty() {
        return "any".into();
    }
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// The CPUs this process may use, split in two halves for a thread sweep (`framebench
/// scale`): the server's side and the client's. With SMT, the logical CPUs of one core (its
/// `thread_siblings_list`) stay together, on one side, and next to each other in the server's
/// list, so that T server threads take whole cores where T is even.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sides {
    /// The server's CPUs: T threads take the first T.
    pub(crate) server: Vec<usize>,
    /// The client's CPUs, one driver thread each.
    pub(crate) client: Vec<usize>,
    /// Whether some core has more than one logical CPU here.
    pub(crate) smt: bool,
}

impl Sides {
    /// This machine's.
    pub(crate) fn here() -> Sides {
        Sides::of(&allowed_cpus(), siblings)
    }

    /// The sides of `allowed`, each CPU's core from `siblings` (the CPUs of its core): the
    /// server takes whole cores, in order, while they fit in half of `allowed`; the client the
    /// rest.
    pub(crate) fn of(allowed: &[usize], siblings: impl Fn(usize) -> Vec<usize>) -> Sides {
        let mut cores: Vec<Vec<usize>> = Vec::new();
        for &c in allowed {
            if cores.iter().any(|core| core.contains(&c)) {
                continue;
            }
            let mut core: Vec<usize> = siblings(c)
                .into_iter()
                .filter(|s| allowed.contains(s))
                .collect();
            if !core.contains(&c) {
                core.push(c);
            }
            core.sort_unstable();
            cores.push(core);
        }
        let half = allowed.len() / 2;
        let (mut server, mut client) = (Vec::new(), Vec::new());
        for core in &cores {
            if client.is_empty() && server.len() + core.len() <= half {
                server.extend(core);
            } else {
                client.extend(core);
            }
        }
        client.sort_unstable();
        Sides {
            server,
            client,
            smt: cores.iter().any(|c| c.len() > 1),
        }
    }
}

/// The logical CPUs of `cpu`'s core, from sysfs (just `cpu` when it cannot be read).
fn siblings(cpu: usize) -> Vec<usize> {
    std::fs::read_to_string(format!(
        "/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"
    ))
    .ok()
    .and_then(|t| parse_cpus(t.trim()).ok())
    .unwrap_or_else(|| vec![cpu])
}

/// CPUs this process may run on.
pub(crate) fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the kernel fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Pins the calling thread (pid 0) to `cpus`; does nothing for an empty list. Safe to call
/// between fork and exec.
pub fn pin_current_thread(cpus: &[usize]) -> bool {
    if cpus.is_empty() {
        return true;
    }
    // SAFETY: plain syscall on a stack-local set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpus("1").unwrap(), vec![1]);
        assert_eq!(parse_cpus("0,2-4").unwrap(), vec![0, 2, 3, 4]);
        assert!(parse_cpus("x").is_err());
        assert!(parse_cpus("3-1").is_err());
        assert!(parse_cpus("").is_err());
        assert_eq!(format_cpus(&[0, 1, 2, 5]), "0-2,5");
        assert_eq!(format_cpus(&[]), "any");
    }

    #[test]
    fn sides_keep_smt_siblings_together_and_split_in_half() {
        // 2 CPUs, no SMT: one each.
        let two = Sides::of(&[0, 1], |c| vec![c]);
        assert_eq!((two.server, two.client, two.smt), (vec![0], vec![1], false));
        // 16 logical CPUs as 8 cores of two siblings numbered c and c + 8 (Linux's order on
        // x86): the server takes cores 0-3 with their siblings, in pairs.
        let all: Vec<usize> = (0..16).collect();
        let smt = Sides::of(&all, |c| vec![c % 8, c % 8 + 8]);
        assert_eq!(smt.server, vec![0, 8, 1, 9, 2, 10, 3, 11]);
        assert_eq!(smt.client, vec![4, 5, 6, 7, 12, 13, 14, 15]);
        assert!(smt.smt);
        // An odd count: the server gets the smaller half.
        let three = Sides::of(&[0, 1, 2], |c| vec![c]);
        assert_eq!((three.server, three.client), (vec![0], vec![1, 2]));
        // A sibling outside the allowed set is left out.
        let some = Sides::of(&[0, 1, 2, 3], |c| vec![c % 8, c % 8 + 8]);
        assert_eq!((some.server, some.client), (vec![0, 1], vec![2, 3]));
    }

    #[test]
    fn one_core_each_pins_two_distinct_cores_or_none() {
        let p = Pinning::one_core_each();
        assert_eq!(p.client_threads, 1);
        assert_eq!(p.server_cpus.len(), p.client_cpus.len());
        assert!(p.server_cpus.len() <= 1);
        assert!(p.server_cpus.iter().all(|c| !p.client_cpus.contains(c)));
    }
}
