//! Intervals, and the rule that decides whether a difference is printed as a number.
//!
//! Every timed difference framebench publishes (what logging costs, what reading from disk
//! costs, a framework's speed as a fraction of `raw`'s) is an [`Estimate`] with a 95 %
//! interval, taken from paired rounds: the two sides are measured alternately, a few
//! milliseconds apart, so a slow spell of the machine slows both ([`crate::paired`]). The point
//! is the median of the rounds' differences (or ratios), and the interval the distribution-free
//! one for a median: the order statistics whose ranks a Binomial(n, ½) puts 2.5 % outside on
//! each side ([`median_interval`]). It assumes nothing about the shape of the noise, which on
//! this project's machine has long slow spells and is far from normal.
//!
//! The marking rule ([`Estimate::separated`]): a difference whose interval holds "no change"
//! (0 for a difference, 1 for a ratio) is printed as `≈` with the interval's half-width, never
//! as a signed figure.

use serde::{Deserialize, Serialize};

use crate::units::fmt_ns;

/// Coverage of every interval framebench prints.
pub(crate) const CONFIDENCE: f64 = 0.95;

/// A median and its bounds: its [`CONFIDENCE`] interval ([`median_interval`]; `lo` and `hi`
/// are infinite when the sample is too small to bound it, fewer than 6 rounds), or, for a
/// sweep's few rounds, their whole range ([`Estimate::range_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Estimate {
    /// The median (`median` in a sweep's rows that `scale --json` wrote before it was one type).
    #[serde(alias = "median")]
    pub(crate) point: f64,
    /// Lower end of the interval.
    pub(crate) lo: f64,
    /// Upper end of the interval.
    pub(crate) hi: f64,
}

impl Estimate {
    /// Whether the interval leaves out `none`, the value that means "no change" (0 for a
    /// difference, 1 for a ratio): only then is the estimate printed as a number.
    pub(crate) fn separated(&self, none: f64) -> bool {
        self.lo > none || self.hi < none
    }

    /// The larger distance from the point to either end of the interval (what `±` prints).
    pub(crate) fn half_width(&self) -> f64 {
        (self.point - self.lo).max(self.hi - self.point)
    }

    /// Whether the interval is bounded (enough rounds).
    pub(crate) fn bounded(&self) -> bool {
        self.lo.is_finite() && self.hi.is_finite()
    }

    /// The median of the finite `values` with their smallest and largest as its bounds, or
    /// `None` for none.
    pub(crate) fn range_of(values: &[f64]) -> Option<Estimate> {
        let (v, point) = sorted_median(values, f64::is_finite)?;
        Some(Estimate {
            point,
            lo: v[0],
            hi: v[v.len() - 1],
        })
    }

    /// `self / other` with the widest bounds theirs allow (smallest over largest, largest over
    /// smallest).
    pub(crate) fn ratio(&self, other: &Estimate) -> Estimate {
        Estimate {
            point: self.point / other.point,
            lo: self.lo / other.hi,
            hi: self.hi / other.lo,
        }
    }

    /// `f` of the point and of each bound (`f` increasing).
    pub(crate) fn map(&self, f: impl Fn(f64) -> f64) -> Estimate {
        Estimate {
            point: f(self.point),
            lo: f(self.lo),
            hi: f(self.hi),
        }
    }
}

/// The median of `samples` with its distribution-free [`CONFIDENCE`] interval, or `None` for no
/// samples. NaNs are dropped.
pub(crate) fn median_interval(samples: &[f64]) -> Option<Estimate> {
    let (v, point) = sorted_median(samples, |x| !x.is_nan())?;
    let n = v.len();
    let (lo, hi) = match order_ranks(n, 1.0 - CONFIDENCE) {
        Some(k) => (v[k - 1], v[n - k]),
        None => (f64::NEG_INFINITY, f64::INFINITY),
    };
    Some(Estimate { point, lo, hi })
}

/// The median of `samples`, NaNs dropped; `None` for none.
pub(crate) fn median(samples: &[f64]) -> Option<f64> {
    sorted_median(samples, |x| !x.is_nan()).map(|(_, m)| m)
}

/// The samples that `keep` keeps, sorted, with their median; `None` when none is kept.
fn sorted_median(samples: &[f64], keep: impl Fn(f64) -> bool) -> Option<(Vec<f64>, f64)> {
    let mut v: Vec<f64> = samples.iter().copied().filter(|&x| keep(x)).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = match n {
        0 => return None,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    };
    Some((v, median))
}

/// Ranks (1 = best) of figures with intervals, best first by figure (the highest when
/// `highest`, else the lowest): a figure shares the rank of the one before it unless its
/// interval lies wholly on the worse side of the interval of every figure of that rank, so that
/// no rank claims an order its data does not separate. Returns each input's rank, in input
/// order; an unbounded interval separates from nothing.
pub(crate) fn shared_ranks(items: &[(f64, f64, f64)], highest: bool) -> Vec<usize> {
    ranks_by(
        items.len(),
        |a, b| {
            let (a, b) = (items[a].0, items[b].0);
            if highest {
                b.total_cmp(&a)
            } else {
                a.total_cmp(&b)
            }
        },
        |best, other| {
            let ((_, blo, bhi), (_, olo, ohi)) = (items[best], items[other]);
            if highest {
                ohi < blo
            } else {
                olo > bhi
            }
        },
    )
}

/// The shared ranking of `n` items, in input order: sorted best first by `order`, an item
/// opens a new rank (its place in that order) only when `apart(g, it)` holds for every item `g`
/// of the current rank, and shares that rank otherwise. Every ranking framebench prints is
/// made here ([`shared_ranks`], [`crate::timing::shared_ranks`]).
pub(crate) fn ranks_by(
    n: usize,
    order: impl Fn(usize, usize) -> std::cmp::Ordering,
    apart: impl Fn(usize, usize) -> bool,
) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_by(|&a, &b| order(a, b));
    let mut rank = vec![0; n];
    let mut group: Vec<usize> = Vec::new();
    let mut current = 0;
    for (pos, &i) in idx.iter().enumerate() {
        if group.is_empty() || group.iter().all(|&g| apart(g, i)) {
            current = pos + 1;
            group.clear();
        }
        group.push(i);
        rank[i] = current;
    }
    rank
}

/// The largest rank `k ≥ 1` with P(Binomial(n, ½) < k) ≤ α/2, so that the `k`-th smallest and
/// `k`-th largest of `n` samples bound their median with probability at least 1 − α; `None`
/// when even the smallest and largest do not (n < 6 at α = 0.05).
fn order_ranks(n: usize, alpha: f64) -> Option<usize> {
    // Binomial probabilities from logarithms, so that no power of ½ underflows.
    let ln_choose = |k: usize| -> f64 {
        (1..=k)
            .map(|i| ((n + 1 - i) as f64).ln() - (i as f64).ln())
            .sum()
    };
    let ln_half_n = n as f64 * 0.5f64.ln();
    let mut below = 0.0; // P(B < k)
    let mut best = None;
    for k in 1..=n.div_ceil(2) {
        below += (ln_choose(k - 1) + ln_half_n).exp();
        if below <= alpha / 2.0 {
            best = Some(k);
        } else {
            break;
        }
    }
    best
}

/// A time difference in the report's words: `+802 ns ±40 ns (+21 %)` when separated from
/// zero, `≈ (±40 ns)` when not, `≈ (too few rounds)` when unbounded. `base_ns` is the time the
/// percentage is of.
pub(crate) fn delta_text(delta_ns: &Estimate, base_ns: f64) -> String {
    if !delta_ns.bounded() {
        return "≈ (too few rounds)".into();
    }
    let pm = fmt_ns(delta_ns.half_width());
    if !delta_ns.separated(0.0) {
        return format!("≈ (±{pm})");
    }
    let d = delta_ns.point;
    let sign = if d < 0.0 { "−" } else { "+" };
    format!(
        "{sign}{} ±{pm} ({sign}{:.0} %)",
        fmt_ns(d.abs()),
        (d / base_ns * 100.0).abs()
    )
}

/// A ratio in the report's words: `0.83 ±0.02` when separated from 1, `≈ (±0.03)` when not.
pub(crate) fn ratio_text(ratio: &Estimate) -> String {
    if !ratio.bounded() {
        return "≈ (too few rounds)".into();
    }
    if ratio.separated(1.0) {
        format!("{:.2} ±{:.2}", ratio.point, ratio.half_width())
    } else {
        format!("≈ (±{:.2})", ratio.half_width())
    }
}

/// A single time with its interval as a share of it: `1.52 µs ±2 %`.
pub(crate) fn time_text(t: &Estimate) -> String {
    if !t.bounded() || t.point <= 0.0 {
        return fmt_ns(t.point);
    }
    let pct = t.half_width() / t.point * 100.0;
    if pct < 0.5 {
        format!("{} ±<1 %", fmt_ns(t.point))
    } else {
        format!("{} ±{pct:.0} %", fmt_ns(t.point))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(point: f64, lo: f64, hi: f64) -> Estimate {
        Estimate { point, lo, hi }
    }

    #[test]
    fn ranks_are_shared_where_intervals_overlap() {
        // a and b overlap; c lies wholly below both; d overlaps c only.
        let items = [
            (100.0, 95.0, 105.0),
            (98.0, 90.0, 101.0),
            (80.0, 78.0, 82.0),
            (79.0, 70.0, 81.0),
        ];
        assert_eq!(shared_ranks(&items, true), [1, 1, 3, 3]);
        assert_eq!(shared_ranks(&items, false), [3, 3, 1, 1]);
        // No interval: one shared rank.
        let open = [(3.0, f64::NEG_INFINITY, f64::INFINITY), (1.0, 0.5, 1.5)];
        assert_eq!(shared_ranks(&open, true), [1, 1]);
    }

    #[test]
    fn ranks_match_the_binomial_table() {
        // Published values for the 95 % interval of a median: n = 6 → (1, 6), n = 8 → (1, 8),
        // n = 9 → (2, 8), n = 20 → (6, 15), n = 30 → (10, 21).
        assert_eq!(order_ranks(5, 0.05), None);
        assert_eq!(order_ranks(6, 0.05), Some(1));
        assert_eq!(order_ranks(8, 0.05), Some(1));
        assert_eq!(order_ranks(9, 0.05), Some(2));
        assert_eq!(order_ranks(20, 0.05), Some(6));
        assert_eq!(order_ranks(30, 0.05), Some(10));
        // Large n does not underflow: about n/2 − 1.96·√n/2.
        let k = order_ranks(1000, 0.05).unwrap();
        assert!((468..=470).contains(&k), "{k}");
    }

    #[test]
    fn median_interval_of_known_samples() {
        let samples: Vec<f64> = (1..=30).map(f64::from).collect();
        let e = median_interval(&samples).unwrap();
        assert_eq!(e, est(15.5, 10.0, 21.0));
        assert!(median_interval(&[]).is_none());
        let few = median_interval(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(few.point, 2.0);
        assert!(!few.bounded());
        assert_eq!(delta_text(&few, 10.0), "≈ (too few rounds)");
    }

    #[test]
    fn a_range_is_the_median_and_the_extremes_of_the_rounds() {
        assert_eq!(
            Estimate::range_of(&[3.0, 1.0, 2.0]),
            Some(est(2.0, 1.0, 3.0))
        );
        let four = Estimate::range_of(&[4.0, 1.0, f64::NAN, 2.0, 3.0]);
        assert_eq!(four, Some(est(2.5, 1.0, 4.0)));
        assert_eq!(Estimate::range_of(&[]), None);
        // A sweep's rows as `scale --json` wrote them (docs/generated/scaling/) still read.
        let old: Estimate = serde_json::from_str(r#"{"median":2.0,"lo":1.0,"hi":3.0}"#).unwrap();
        assert_eq!(old, est(2.0, 1.0, 3.0));
    }

    #[test]
    fn an_interval_that_holds_zero_prints_approximately() {
        let overlap = est(-802.0, -1500.0, 200.0);
        assert!(!overlap.separated(0.0));
        let text = delta_text(&overlap, 3800.0);
        assert_eq!(text, "≈ (±1.00 µs)");
        assert!(!text.contains('−') && !text.contains('+'), "{text}");
    }

    #[test]
    fn a_separated_difference_prints_its_sign_and_interval() {
        let slower = est(802.0, 760.0, 850.0);
        assert_eq!(delta_text(&slower, 3800.0), "+802 ns ±48 ns (+21 %)");
        let faster = est(-518.0, -600.0, -450.0);
        assert!(faster.separated(0.0));
        assert_eq!(delta_text(&faster, 2700.0), "−518 ns ±82 ns (−19 %)");
    }

    #[test]
    fn ratios_are_marked_against_one() {
        assert_eq!(ratio_text(&est(1.32, 0.9, 1.6)), "≈ (±0.42)");
        assert_eq!(ratio_text(&est(0.83, 0.81, 0.85)), "0.83 ±0.02");
        assert_eq!(ratio_text(&est(1.10, 1.05, 1.12)), "1.10 ±0.05");
        assert!(est(1.10, 1.05, 1.12).separated(1.0));
    }

    #[test]
    fn times_carry_their_share() {
        assert_eq!(time_text(&est(1520.0, 1490.0, 1550.0)), "1.52 µs ±2 %");
        assert_eq!(time_text(&est(1000.0, 999.0, 1001.0)), "1.00 µs ±<1 %");
    }
}
