//! What a sweep runs: the server threads T that fit this machine, the CPUs of each side, the one
//! connection count, the targets and the order they take each round. Pure functions of the
//! arguments and the machine's [`Sides`], so that tests check them on any machine.

use crate::framework::Entry;
use crate::options::{Options, Protocol, Runtime};
use crate::pinning::{format_cpus, Pinning, Sides};

/// The widest default T: 64 server threads, HttpArena's.
const WIDEST_DEFAULT: usize = 64;

/// The server threads to sweep, and the line that says the default list was cut, if it was.
/// `asked` is `--threads`; `fit` is how many CPUs the server's side has.
pub(crate) fn thread_list(
    asked: Option<&[usize]>,
    fit: usize,
    allowed: usize,
) -> anyhow::Result<(Vec<usize>, Option<String>)> {
    let fit = fit.max(1);
    match asked {
        Some(list) => {
            if let Some(t) = list.iter().find(|&&t| t > fit) {
                return Err(crate::error::usage(format!(
                    "--threads {t} does not fit: the server gets half of the {allowed} CPUs this \
                     process may use, at most {fit} (the client gets the other half)"
                )));
            }
            let mut list = list.to_vec();
            list.sort_unstable();
            list.dedup();
            Ok((list, None))
        }
        None => {
            let full: Vec<usize> = std::iter::successors(Some(1usize), |t| Some(t * 2))
                .take_while(|&t| t <= WIDEST_DEFAULT)
                .collect();
            let list: Vec<usize> = full.iter().copied().filter(|&t| t <= fit).collect();
            let note = (list.len() < full.len()).then(|| {
                format!(
                    "threads: {} (the list 1, 2, 4 … {WIDEST_DEFAULT} cut to half of the {allowed} \
                     CPUs this process may use; the client gets the other half)",
                    list.iter()
                        .map(usize::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            });
            Ok((list, note))
        }
    }
}

/// The one connection count of the sweep, the same at every T so that only the cores change:
/// `asked`, else 256 or 32 per thread at the widest T, whichever is larger.
pub(crate) fn connections(asked: Option<usize>, widest: usize) -> usize {
    asked.unwrap_or_else(|| (32 * widest).max(256))
}

/// Where a cell at T runs: the server on the first T CPUs of its side, the client on every CPU
/// of the other, one driver thread each.
pub(crate) fn pinning(sides: &Sides, t: usize) -> Pinning {
    let server: Vec<usize> = sides.server.iter().copied().take(t).collect();
    let client_threads = sides.client.len().max(1);
    Pinning {
        server_cpus: server,
        client_cpus: sides.client.clone(),
        client_threads,
    }
}

/// `server on cpus 0-3, client on cpus 4-7 (4 threads)`, for the header.
pub(crate) fn sides_label(sides: &Sides) -> String {
    format!(
        "server side cpus {}, client side cpus {} ({} driver thread{}){}",
        format_cpus(&sides.server),
        format_cpus(&sides.client),
        sides.client.len().max(1),
        if sides.client.len() > 1 { "s" } else { "" },
        if sides.smt {
            "; SMT siblings kept on one side"
        } else {
            ""
        }
    )
}

/// One line of the sweep: a framework, the runtime it runs on, and its logging and io.
#[derive(Clone, Copy)]
pub(crate) struct Target {
    /// The framework.
    pub(crate) entry: &'static Entry,
    /// `Some` for a framework that takes `--runtime` ([`Entry::per_core`]), `None` for one with
    /// a thread model of its own.
    pub(crate) runtime: Option<Runtime>,
    /// Logging and io (its threads and runtime are set per cell by [`Target::options`]).
    pub(crate) variant: Options,
}

impl Target {
    /// `work-stealing`, `per-core`, or `own` for a framework with its own thread model.
    pub(crate) fn runtime_label(&self) -> String {
        self.runtime
            .map_or_else(|| "own".to_owned(), |r| r.to_string())
    }

    /// The server's options at T. A thread-per-connection pool (iron, nickel) gets a thread
    /// per connection, as in the quick compare, so that starvation is not read as speed; it
    /// still runs on T CPUs.
    pub(crate) fn options(&self, t: usize, connections: usize) -> Options {
        let threads = if self.entry.thread_per_connection {
            t.max(connections)
        } else {
            t
        };
        Options {
            threads,
            runtime: self.runtime.unwrap_or_default(),
            ..self.variant
        }
    }

    /// `hyper (per-core)` or `actix`.
    pub(crate) fn label(&self) -> String {
        match self.runtime {
            Some(r) => format!("{} ({r})", self.entry.name),
            None => self.entry.name.to_owned(),
        }
    }
}

/// The targets: every framework × the runtimes asked for (both by default) where it takes
/// them under `protocol`, else its own × every logging and io variant.
pub(crate) fn targets(
    entries: &[&'static Entry],
    runtimes: &[Runtime],
    variants: &[Options],
    protocol: Protocol,
) -> Vec<Target> {
    let mut out = Vec::new();
    for &entry in entries {
        let runtimes: Vec<Option<Runtime>> = if entry.takes_per_core(protocol) {
            runtimes.iter().copied().map(Some).collect()
        } else {
            vec![None]
        };
        for runtime in runtimes {
            for &variant in variants {
                out.push(Target {
                    entry,
                    runtime,
                    variant,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_list_is_cut_to_half_the_cpus_with_a_note() {
        // 2 CPUs: T = 1 only, and the line says why.
        let (list, note) = thread_list(None, 1, 2).unwrap();
        assert_eq!(list, vec![1]);
        let note = note.unwrap();
        assert!(note.starts_with("threads: 1 (the list"), "{note}");
        assert!(note.contains("half of the 2 CPUs"), "{note}");
        // 16 CPUs: 1, 2, 4, 8.
        assert_eq!(thread_list(None, 8, 16).unwrap().0, vec![1, 2, 4, 8]);
        // 128: the whole list, no note.
        let (list, note) = thread_list(None, 64, 128).unwrap();
        assert_eq!(list, vec![1, 2, 4, 8, 16, 32, 64]);
        assert!(note.is_none());
    }

    #[test]
    fn a_named_t_that_cannot_fit_is_refused() {
        let e = thread_list(Some(&[1, 2]), 1, 2).unwrap_err().to_string();
        assert!(e.starts_with("--threads 2 does not fit"), "{e}");
        assert!(e.contains("at most 1"), "{e}");
        assert_eq!(
            thread_list(Some(&[4, 1, 4, 2]), 4, 8).unwrap().0,
            vec![1, 2, 4]
        );
    }

    #[test]
    fn one_connection_count_for_every_t() {
        assert_eq!(connections(None, 1), 256);
        assert_eq!(connections(None, 8), 256);
        assert_eq!(connections(None, 16), 512);
        assert_eq!(connections(Some(10), 16), 10);
    }

    #[test]
    fn pinning_takes_the_first_t_server_cpus_and_the_whole_client_side() {
        let sides = Sides::of(&(0..16).collect::<Vec<_>>(), |c| vec![c % 8, c % 8 + 8]);
        let p = pinning(&sides, 2);
        assert_eq!(p.server_cpus, vec![0, 8]);
        assert_eq!(p.client_cpus, vec![4, 5, 6, 7, 12, 13, 14, 15]);
        assert_eq!(p.client_threads, 8);
    }
}
