//! The unit formatters every printer uses: a time in ns, µs or ms, a count with thousands
//! separators.

/// `456 ns`, `1.23 µs`, `4.56 ms`.
pub(crate) fn fmt_ns(ns: f64) -> String {
    let a = ns.abs();
    if a >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if a >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// `27,055`: rounded to a whole number, with thousands separators.
pub(crate) fn fmt_count(n: f64) -> String {
    let r = n.round();
    let s = (r.abs() as u64).to_string();
    let mut out = String::new();
    if r < 0.0 {
        out.push('−');
    }
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(fmt_ns(456.4), "456 ns");
        assert_eq!(fmt_ns(1234.0), "1.23 µs");
        assert_eq!(fmt_ns(4_560_000.0), "4.56 ms");
        assert_eq!(fmt_count(27055.0), "27,055");
        assert_eq!(fmt_count(999.0), "999");
        assert_eq!(fmt_count(-1234567.0), "−1,234,567");
    }
}
