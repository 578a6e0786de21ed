//! The unit formatters every printer uses: a time in ns, µs or ms (and latencies from µs), a
//! count with thousands separators, a rate in thousands, a share, a size, a ratio in three
//! significant digits. A dash stands for a figure that was not measured.

use std::time::Duration;

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

/// A duration as [`fmt_ns`] writes it.
pub(crate) fn fmt_time(t: std::time::Duration) -> String {
    fmt_ns(t.as_secs_f64() * 1e9)
}

/// `3.21 µs` of CPU per request, or a dash.
pub(crate) fn per_req(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{v:.2} µs"))
}

/// `123 µs`, `1.23 ms`, `4.5 s`.
pub(crate) fn us(v: f64) -> String {
    if v <= 0.0 {
        "–".into()
    } else if v < 1000.0 {
        format!("{v:.0} µs")
    } else if v < 1_000_000.0 {
        format!("{:.2} ms", v / 1000.0)
    } else {
        format!("{:.2} s", v / 1e6)
    }
}

/// `45.3 k`.
pub(crate) fn kilo(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.1} k", v / 1000.0)
    } else {
        format!("{v:.0}")
    }
}

/// `96%`, or a dash.
pub(crate) fn pct(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{v:.0}%"))
}

/// `12.3 MB`, or a dash.
pub(crate) fn mb(v: Option<u64>) -> String {
    v.map_or("–".into(), |v| format!("{:.1} MB", v as f64 / 1e6))
}

/// A figure in at most four characters, three significant digits: `0.94`, `11.9`, `154`.
pub(crate) fn sig3(v: f64) -> String {
    if v < 9.995 {
        format!("{v:.2}")
    } else if v < 99.95 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// Parses `10s`, `500ms`, `2m`, `1.5s`.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (num, unit) = t
        .find(|c: char| c.is_ascii_alphabetic())
        .map_or((t, "s"), |i| t.split_at(i));
    let v: f64 = num
        .parse()
        .map_err(|_| format!("bad duration {text:?} (want e.g. 10s, 500ms, 2m)"))?;
    let secs = match unit {
        "ms" => v / 1000.0,
        "s" => v,
        "m" => v * 60.0,
        _ => return Err(format!("bad duration unit in {text:?} (ms, s or m)")),
    };
    if !(0.0..=86_400.0).contains(&secs) || !secs.is_finite() {
        return Err(format!("duration {text:?} out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `512 B`, `4,096 B`, `12.3 KiB`, `1.50 MiB`, `3.82 GiB`: bytes, in binary units from 10 KiB.
pub(crate) fn fmt_bytes(b: f64) -> String {
    let a = b.abs();
    if a >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2} GiB", b / (1024.0 * 1024.0 * 1024.0))
    } else if a >= 10.0 * 1024.0 * 1024.0 {
        format!("{:.1} MiB", b / (1024.0 * 1024.0))
    } else if a >= 1024.0 * 1024.0 {
        format!("{:.2} MiB", b / (1024.0 * 1024.0))
    } else if a >= 10.0 * 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{} B", fmt_count(b))
    }
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
