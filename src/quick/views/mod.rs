//! What the quick compare prints and writes, from one [`super::Run`]: the compact first screen
//! ([`compact`]), the long table ([`long`]) with the hello cells past saturation ([`hello`]) in
//! both, the summary chart ([`chart`]) and the results file ([`results`]). This file holds the
//! text the views share: line wrapping and the pointer to `framebench scale`.

mod chart;
mod compact;
mod hello;
pub(crate) mod long;
mod notes;
mod results;

/// The compact view's legend and notes wrap at this width (its table is 97 columns).
pub(crate) const SCREEN_WIDTH: usize = 100;

/// `text` broken into lines of at most `width` characters at spaces, each line ended.
pub(crate) fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// On a machine of 8 CPUs or more, the line that says how many server threads the loopback
/// column ran and points to `framebench scale`: there the rankings move with the threads (a
/// 16-core machine ranked 20 frameworks at ρ = 0.71 between 1 and 8 threads). Nothing on fewer.
fn scale_pointer(threads: usize, cpus: usize) -> Option<String> {
    (cpus >= 8).then(|| {
        format!(
            "Loopback ran every server on {threads} thread{} (half of this machine's {cpus} \
             CPUs); rankings move with the thread count: `framebench scale` sweeps it, with \
             each framework's speed-up and efficiency.",
            if threads == 1 { "" } else { "s" }
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::sig3;

    #[test]
    fn the_scale_pointer_shows_from_8_cpus_only() {
        assert_eq!(scale_pointer(1, 2), None);
        assert_eq!(scale_pointer(3, 7), None);
        let line = scale_pointer(8, 16).unwrap();
        assert!(
            line.contains("8 threads (half of this machine's 16 CPUs)"),
            "{line}"
        );
        assert!(line.contains("`framebench scale`"), "{line}");
    }

    #[test]
    fn figures_keep_three_significant_digits_in_four_characters() {
        assert_eq!(sig3(0.942), "0.94");
        assert_eq!(sig3(11.96), "12.0");
        assert_eq!(sig3(57.36), "57.4");
        assert_eq!(sig3(154.3), "154");
        assert_eq!(wrap("aa bb cc", 5), "aa bb\ncc\n");
    }
}
