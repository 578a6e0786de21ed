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

/// A protocol's table (`framebench list --protocol h2c` is docs/methodology/http2.md's): one row per
/// framework compiled in, in registry order, saying whether its server speaks `protocol` and
/// through what, or why not ([`crate::framework::Framework::PROTOCOLS`]).
pub(crate) fn protocol_table(protocol: crate::options::Protocol) -> String {
    let mut out = format!("| name | {protocol} | how, or why not |\n|---|---|---|\n");
    for e in REGISTRY {
        let (serves, text) = match e.support(protocol) {
            crate::framework::Support::Supported(how) => ("yes", how),
            crate::framework::Support::Unsupported(why) => ("no", why),
        };
        // Writing to a String cannot fail.
        let _ = writeln!(out, "| `{}` | {serves} | {text} |", e.name);
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
