//! The notes under the long table: why cells say `skip` (each cause once), what a server did
//! that the table marks without failing, and every failure.

use std::fmt::Write as _;

/// What the combined table says under itself: why cells say `skip` (a missing optional tool),
/// once each, and every failure.
#[derive(Default)]
pub(super) struct Notes {
    pub(super) skipped: Vec<String>,
    /// What a server did that the table marks without failing the run.
    pub(super) findings: Vec<String>,
    pub(super) failed: Vec<String>,
}

impl Notes {
    pub(super) fn skip(&mut self, why: &str) {
        if !self.skipped.iter().any(|s| s == why) {
            self.skipped.push(why.to_owned());
        }
    }

    /// Writes the notes; returns the number of failures.
    pub(super) fn write(&self, out: &mut String) -> usize {
        for why in &self.skipped {
            let _ = writeln!(out, "skip: {why}");
        }
        for what in &self.findings {
            let _ = writeln!(out, "note: {what}");
        }
        for f in &self.failed {
            let _ = writeln!(out, "FAIL {f}");
        }
        self.failed.len()
    }
}
