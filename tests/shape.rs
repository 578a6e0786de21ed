//! The module layout stays a tree: no two top-level modules of `src/` use each other
//! (`crate::a` in `b` and `crate::b` in `a`), the circle issue 24 removed between `allocs` and
//! `bench` (and `bench` and `deltas`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `text` without its `//` comments.
fn code(text: &str) -> String {
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `code` names top-level module `m`: `crate::m::…`, `crate::m;` or inside a
/// `use crate::{…}` group.
fn names(code: &str, m: &str) -> bool {
    let direct = code.match_indices(&format!("crate::{m}")).any(|(i, _)| {
        let rest = &code[i + "crate::".len() + m.len()..];
        !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_')
    });
    let grouped = code.split("use crate::{").skip(1).any(|g| {
        g.split('}')
            .next()
            .unwrap_or("")
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .any(|w| w == m)
    });
    direct || grouped
}

#[test]
fn no_two_top_level_modules_use_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut modules: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in std::fs::read_dir(&src).unwrap().flatten() {
        let path = entry.path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if ["lib", "main", "bin"].contains(&name.as_str()) {
            continue;
        }
        let mut files = Vec::new();
        if path.is_dir() {
            sources(&path, &mut files);
        } else {
            files.push(path);
        }
        modules.entry(name).or_default().extend(files);
    }
    assert!(modules.len() > 10, "{modules:?}");
    let mut uses: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (m, files) in &modules {
        let text: String = files
            .iter()
            .map(|f| code(&std::fs::read_to_string(f).unwrap()))
            .collect();
        for other in modules.keys().filter(|o| *o != m) {
            if names(&text, other) {
                uses.entry(m).or_default().insert(other);
            }
        }
    }
    let circles: Vec<(&str, &str)> = uses
        .iter()
        .flat_map(|(a, bs)| bs.iter().map(move |b| (*a, *b)))
        .filter(|(a, b)| a < b && uses.get(b).is_some_and(|s| s.contains(a)))
        .collect();
    assert!(
        circles.is_empty(),
        "modules that use each other: {circles:?}"
    );
    // The scan itself finds uses: `report` reads `deltas`' files.
    assert!(uses["report"].contains("deltas"), "{uses:?}");
}
