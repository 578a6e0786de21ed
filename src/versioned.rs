//! The one reader of framebench's own files (a results file, `deltas --json`): it reads the
//! file, checks its `schema` field (`framebench-results/1`) against the versions this build
//! reads, and only then deserializes it into the typed struct, so that a file of another
//! version is named as such instead of failing on whichever field its format moved. Anything
//! else (not JSON, another tool's file, an older or newer framebench's, a field missing) is bad
//! input: one line, exit 2, naming the file and the versions accepted.

use std::path::Path;

use anyhow::Context as _;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::BadInput;

/// A file format of framebench's own, named by its `schema` field.
pub(crate) trait Versioned: DeserializeOwned {
    /// The `schema` values this build reads: `framebench-results/1`.
    const SCHEMAS: &'static [&'static str];
    /// What such a file is, for errors: `a framebench results file`.
    const WHAT: &'static str;
    /// How to write one, for errors: `write one with --json`.
    const HOW: &'static str;
}

/// Reads `path` as a `T`: an I/O error as such, anything else read but not a `T` as
/// [`BadInput`].
pub(crate) fn read<T: Versioned>(path: &Path) -> anyhow::Result<T> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse(&text, &path.display().to_string())
}

/// [`read`] of text already read; `what` names it in errors.
pub(crate) fn parse<T: Versioned>(text: &str, what: &str) -> anyhow::Result<T> {
    let accepted = T::SCHEMAS.join(" or ");
    let bad = |line: String| anyhow::Error::new(BadInput(line));
    let value: Value = serde_json::from_str(text).map_err(|e| {
        bad(format!(
            "{what} is not JSON ({e}); this framebench reads {accepted}"
        ))
    })?;
    match value.get("schema").and_then(Value::as_str) {
        Some(s) if T::SCHEMAS.contains(&s) => {}
        Some(s) => {
            return Err(bad(format!(
                "{what} has schema {s}{}; this framebench reads {accepted}",
                age(s, T::SCHEMAS)
            )));
        }
        None => {
            return Err(bad(format!(
                "{what} is not {} (no \"schema\"; this framebench reads {accepted}): {}",
                T::WHAT,
                T::HOW
            )));
        }
    }
    T::deserialize(value).map_err(|e| bad(format!("{what}: not a {accepted} file: {e}")))
}

/// `, of a newer framebench` when `schema` is a later version of a format in `accepted`
/// (`framebench-results/2` against `framebench-results/1`), `, of an older framebench` when an
/// earlier one, else nothing (another format or tool).
fn age(schema: &str, accepted: &[&str]) -> &'static str {
    let split = |s: &str| {
        s.rsplit_once('/')
            .and_then(|(name, v)| Some((name.to_owned(), v.parse::<u32>().ok()?)))
    };
    let Some((name, version)) = split(schema) else {
        return "";
    };
    let known: Vec<u32> = accepted
        .iter()
        .filter_map(|a| split(a))
        .filter(|(n, _)| *n == name)
        .map(|(_, v)| v)
        .collect();
    match (known.iter().max(), known.iter().min()) {
        (Some(&max), _) if version > max => ", of a newer framebench",
        (_, Some(&min)) if version < min => ", of an older framebench",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    struct Doc {
        cells: Vec<u32>,
    }

    impl Versioned for Doc {
        const SCHEMAS: &'static [&'static str] = &["framebench-doc/2", "framebench-doc/3"];
        const WHAT: &'static str = "a framebench doc";
        const HOW: &'static str = "write one with --doc";
    }

    /// The one line a text is refused with; it is bad input (exit 2).
    fn refused(text: &str) -> String {
        let e = parse::<Doc>(text, "d.json").unwrap_err();
        assert!(e.is::<BadInput>(), "{e:#}");
        let line = format!("{e:#}");
        assert!(!line.contains('\n'), "{line}");
        line
    }

    #[test]
    fn reads_the_versions_it_accepts() {
        for v in [2, 3] {
            let doc: Doc = parse(
                &format!(r#"{{"schema": "framebench-doc/{v}", "cells": [1, 2]}}"#),
                "d.json",
            )
            .unwrap();
            assert_eq!(doc.cells, [1, 2]);
        }
    }

    #[test]
    fn a_foreign_future_or_malformed_file_is_one_line_of_bad_input() {
        let accepts = "this framebench reads framebench-doc/2 or framebench-doc/3";
        assert_eq!(
            refused(r#"{"schema": "framebench-doc/4", "cells": []}"#),
            format!("d.json has schema framebench-doc/4, of a newer framebench; {accepts}")
        );
        assert_eq!(
            refused(r#"{"schema": "framebench-doc/1", "cells": []}"#),
            format!("d.json has schema framebench-doc/1, of an older framebench; {accepts}")
        );
        // Another tool's file: Bencher's BMF, a gungraun summary.
        assert_eq!(
            refused(r#"{"axum": {"latency": {"value": 1.0}}}"#),
            format!(
                "d.json is not a framebench doc (no \"schema\"; {accepts}): write one with --doc"
            )
        );
        assert_eq!(
            refused(r#"{"version": "7", "schema": "gungraun/7"}"#),
            format!("d.json has schema gungraun/7; {accepts}")
        );
        assert!(refused("not json").starts_with("d.json is not JSON ("));
        let missing = refused(r#"{"schema": "framebench-doc/3"}"#);
        assert!(
            missing.starts_with("d.json: not a framebench-doc/2 or framebench-doc/3 file: ")
                && missing.contains("missing field `cells`"),
            "{missing}"
        );
    }

    #[test]
    fn a_missing_file_is_an_error_of_the_run() {
        let e = read::<Doc>(Path::new("/nonexistent/d.json")).unwrap_err();
        assert!(!e.is::<BadInput>());
        assert!(format!("{e:#}").starts_with("reading /nonexistent/d.json: "));
    }
}
