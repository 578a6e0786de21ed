//! The client's latencies per interval of the recorded window, for `load --hdr-log`: one
//! histogram per interval, made only when a latency lands in it.

use std::time::Duration;

use hdrhistogram::Histogram;

/// An empty latency histogram: 1 ns to an hour, at 3 significant figures (270 KB of counts).
pub(super) fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("bounds")
}

/// The recorded latencies again, one histogram per interval of the recorded window, for an
/// HdrHistogram interval log (`load --hdr-log`).
///
/// An interval's histogram is made when the first latency lands in it. Made up front, a
/// count-bounded run's 20 s bound in 1 ms intervals was 20,000 histograms of 270 KB each:
/// 5.4 GB zeroed and copied by every client thread after the run's clock had started and
/// before its first request. On an idle machine that took 6-12 s of the bound; under
/// contention it took all of it, and the run ended having sent nothing (issue 38). Now a
/// run holds one histogram per interval that saw a response, and 8 bytes for each other.
#[derive(Debug, Clone, Default)]
pub(crate) struct Intervals {
    hists: Vec<Option<Box<Histogram<u64>>>>,
}

impl Intervals {
    /// `n` intervals, none holding a latency yet.
    fn new(n: usize) -> Self {
        Intervals {
            hists: vec![None; n],
        }
    }

    /// The intervals of a window of `duration` in intervals of `interval`, if the run asks
    /// for them (at most 100,000).
    pub(super) fn over(duration: Duration, interval: Option<Duration>) -> Self {
        let Some(iv) = interval else {
            return Intervals::default();
        };
        let n = duration
            .as_nanos()
            .div_ceil(iv.as_nanos().max(1))
            .clamp(1, 100_000) as usize;
        Intervals::new(n)
    }

    /// Intervals in the window, recorded in or not.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.hists.len()
    }

    /// The run asked for none.
    pub(crate) fn is_empty(&self) -> bool {
        self.hists.is_empty()
    }

    /// Records `ns` in interval `k` (the last if `k` is past it).
    pub(super) fn record(&mut self, k: usize, ns: u64) {
        let last = self.hists.len().saturating_sub(1);
        if let Some(slot) = self.hists.get_mut(k.min(last)) {
            slot.get_or_insert_with(|| Box::new(latency_histogram()))
                .saturating_record(ns);
        }
    }

    /// Adds another thread's intervals of the same window, interval by interval.
    pub(super) fn add(&mut self, other: Intervals) {
        if self.hists.is_empty() {
            *self = other;
            return;
        }
        for (sum, h) in self.hists.iter_mut().zip(other.hists) {
            match (sum.as_mut(), h) {
                (_, None) => {}
                (None, Some(h)) => *sum = Some(h),
                (Some(sum), Some(h)) => {
                    let _ = sum.add(&*h);
                }
            }
        }
    }

    /// The intervals up to the last one a latency landed in.
    pub(crate) fn recorded(&self) -> usize {
        self.hists
            .iter()
            .rposition(Option::is_some)
            .map_or(0, |k| k + 1)
    }

    /// Every interval's histogram in order, an empty one for an interval nothing landed in.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Histogram<u64>> {
        static EMPTY: std::sync::OnceLock<Histogram<u64>> = std::sync::OnceLock::new();
        let empty = EMPTY.get_or_init(latency_histogram);
        self.hists
            .iter()
            .map(move |h| h.as_deref().unwrap_or(empty))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_hold_each_latency_once_and_only_where_it_landed() {
        let mut a = Intervals::new(20_000);
        assert_eq!((a.len(), a.recorded()), (20_000, 0));
        a.record(3, 1_000);
        a.record(3, 2_000);
        // Past the window: the last interval holds it.
        a.record(25_000, 5_000);
        let mut b = Intervals::new(20_000);
        b.record(3, 4_000);
        b.record(7, 3_000);
        a.add(b);
        let counts: Vec<u64> = a.iter().map(|h| h.len()).collect();
        assert_eq!(counts.len(), 20_000);
        assert_eq!((counts[3], counts[7], counts[19_999]), (3, 1, 1));
        assert_eq!(counts.iter().sum::<u64>(), 5);
        assert_eq!(a.recorded(), 20_000);
        assert!(a
            .iter()
            .nth(7)
            .is_some_and(|h| h.equivalent(h.max(), 3_000)));
        // Merging into nothing takes the other side whole.
        let mut none = Intervals::default();
        none.add(a);
        assert_eq!(none.len(), 20_000);
        assert!(Intervals::default().is_empty());
    }
}
