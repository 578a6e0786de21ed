//! Where one dispatch allocates: the backtraces [`super::gate`] records, grouped by the first
//! frames outside the allocator's own plumbing (`alloc::`, `core::`, `std::` and this module),
//! largest group first. `framebench profile <fw> <scenario> --allocs` prints them.
//!
//! Frames are named from the symbol table, so the release build gives function names; the
//! `profiling` build (`debug = 1`) adds `file:line`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::gate::Recorded;

/// One allocation site: the frames that name it, and what was allocated there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Site {
    /// The first `depth` frames outside the plumbing, innermost first.
    pub(crate) frames: Vec<String>,
    /// Allocations made there.
    pub(crate) allocs: u64,
    /// Reallocations made there.
    pub(crate) reallocs: u64,
    /// Bytes asked for (the new size for a reallocation).
    pub(crate) bytes: u64,
}

/// Frames of the allocator's plumbing: skipped before a site is named.
fn plumbing(frame: &str) -> bool {
    let name = frame.trim_start_matches('<');
    [
        "std::backtrace",
        "std::alloc",
        "std::sys",
        "alloc::",
        "core::",
        "__rust",
        "__rdl",
        "__rg",
        "framebench::allocs",
        "backtrace::",
    ]
    .iter()
    .any(|p| name.starts_with(p))
        || name.contains("as core::alloc::global::GlobalAlloc>")
        || name.contains("as alloc::")
        || name.contains("as core::clone::Clone>::clone")
}

/// The frames of a printed backtrace, innermost first: each symbol, with ` at file:line`
/// when the build has line tables.
pub(crate) fn frames(printed: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in printed.lines() {
        let t = line.trim_start();
        if let Some(at) = t.strip_prefix("at ") {
            if let Some(last) = out.last_mut() {
                if !last.contains(" at ") {
                    let _ = write!(last, " at {at}");
                }
            }
        } else if let Some((n, symbol)) = t.split_once(": ") {
            if n.chars().all(|c| c.is_ascii_digit()) {
                out.push(symbol.to_owned());
            }
        }
    }
    out
}

/// Groups `recorded` by their first `depth` frames outside the plumbing.
pub(crate) fn group(recorded: &[Recorded], depth: usize) -> Vec<Site> {
    let mut by: BTreeMap<Vec<String>, Site> = BTreeMap::new();
    for r in recorded {
        let printed = r.backtrace.to_string();
        let key: Vec<String> = frames(&printed)
            .into_iter()
            .skip_while(|f| plumbing(f))
            .take(depth.max(1))
            .collect();
        let site = by.entry(key.clone()).or_insert_with(|| Site {
            frames: key,
            allocs: 0,
            reallocs: 0,
            bytes: 0,
        });
        if r.realloc {
            site.reallocs += 1;
        } else {
            site.allocs += 1;
        }
        site.bytes += r.size as u64;
    }
    let mut sites: Vec<Site> = by.into_values().collect();
    sites.sort_by(|a, b| {
        (b.allocs + b.reallocs, b.bytes)
            .cmp(&(a.allocs + a.reallocs, a.bytes))
            .then_with(|| a.frames.cmp(&b.frames))
    });
    sites
}

/// The sites as a table: calls, reallocations, bytes, then the frames, one per line.
pub(crate) fn render(sites: &[Site]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>6} {:>8} {:>8}  site",
        "allocs", "reallocs", "bytes"
    );
    for s in sites {
        let mut frames = s.frames.iter();
        let first = frames
            .next()
            .map_or("(no frame outside the allocator)", |f| f);
        let _ = writeln!(
            out,
            "{:>6} {:>8} {:>8}  {first}",
            s.allocs, s.reallocs, s.bytes
        );
        for f in frames {
            let _ = writeln!(out, "{:>26}    ← {f}", "");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRINTED: &str = "   0: std::backtrace::Backtrace::force_capture
   1: <framebench::allocs::Global as core::alloc::global::GlobalAlloc>::alloc
   2: alloc::raw_vec::RawVec<T,A>::grow_one
   3: http::header::map::HeaderMap<T>::try_reserve_one
             at /src/http/map.rs:12:5
   4: axum::routing::Router<S>::call_with_state
   5: main
";

    #[test]
    fn frames_pair_symbols_with_their_lines() {
        let f = frames(PRINTED);
        assert_eq!(f.len(), 6);
        assert_eq!(
            f[3],
            "http::header::map::HeaderMap<T>::try_reserve_one at /src/http/map.rs:12:5"
        );
    }

    #[test]
    fn the_site_is_the_first_frame_outside_the_plumbing() {
        let first: Vec<String> = frames(PRINTED)
            .into_iter()
            .skip_while(|f| plumbing(f))
            .take(2)
            .collect();
        assert!(first[0].starts_with("http::header::map::HeaderMap"));
        assert!(first[1].starts_with("axum::routing::Router"));
    }
}
