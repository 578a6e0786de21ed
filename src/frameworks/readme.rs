//! The README's framework table, generated from the registry: each framework's
//! [`crate::framework::About`] and the versions Cargo.lock held at build time.
//! `framebench list --markdown` prints it; README.md holds it between two marker comments,
//! and a test fails when that copy is stale.

use std::fmt::Write as _;

use super::REGISTRY;
use crate::framework::{Entry, Version};

/// The README's framework table: a header, then one row per framework compiled in, in registry
/// order.
pub(crate) fn markdown_table() -> String {
    let mut out = String::from(
        "| name | crate | version | static files | in-process path | server |\n\
         |---|---|---|---|---|---|\n",
    );
    for e in REGISTRY {
        let about = &e.about;
        // Writing to a String cannot fail.
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} |",
            e.name,
            about.crate_label.unwrap_or(e.krate),
            version_cell(e),
            about.static_files,
            about.in_process,
            about.server,
        );
    }
    out
}

/// The version column: the locked version, then the note and each companion's locked version
/// in parentheses; or what [`Version`] says instead.
fn version_cell(e: &Entry) -> String {
    match e.about.version {
        Version::Own => "–".to_owned(),
        Version::Other(text) => text(),
        Version::Locked(note) => {
            let companions = e.about.companions.iter().map(|(krate, prefix)| {
                let version = crate::env::crate_version(krate, prefix).unwrap_or("?");
                format!("{krate} {version}")
            });
            let extra: Vec<String> = (!note.is_empty())
                .then(|| note.to_owned())
                .into_iter()
                .chain(companions)
                .collect();
            if extra.is_empty() {
                e.version().to_owned()
            } else {
                format!("{} ({})", e.version(), extra.join(", "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line before the generated table in README.md.
    const BEGIN: &str = "<!-- framebench list --markdown: begin -->";
    /// The line after it.
    const END: &str = "<!-- framebench list --markdown: end -->";

    /// README.md's table between the markers is exactly [`markdown_table`]'s output (with every
    /// feature on; with some off, each row compiled in is one of its lines).
    #[test]
    fn readme_table_is_generated() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
        let readme = std::fs::read_to_string(&path).expect("README.md");
        let table = readme
            .split_once(&format!("{BEGIN}\n"))
            .and_then(|(_, rest)| rest.split_once(END))
            .map(|(table, _)| table)
            .unwrap_or_else(|| panic!("README.md has no `{BEGIN}` … `{END}` block"));
        let want = markdown_table();
        let regenerate = format!(
            "README.md's framework table is stale: replace the lines between `{BEGIN}` and \
             `{END}` with the output of `cargo run --release -- list --markdown`"
        );
        if REGISTRY.len() == super::super::ENTRIES {
            assert!(table == want, "{regenerate}");
        } else {
            for row in want.lines() {
                assert!(table.lines().any(|l| l == row), "{regenerate}: {row}");
            }
        }
    }
}
