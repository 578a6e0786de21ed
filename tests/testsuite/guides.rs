//! The contributor guides name only what exists: every file, function, test, constant, macro and
//! test target that docs/adding-a-framework.md and docs/adding-a-scenario.md name is in the tree,
//! so that a guide cannot send a contributor to a test that was renamed or a file that moved.
//!
//! What a guide marks, and what is checked (fenced code blocks are skipped: they quote code and
//! output):
//! - a path: a word with a `/` that ends in one of [`FILE_ENDS`] or in `/` (a folder), in a code
//!   span, or in prose where it starts at one of the [`TOP`] folders. It exists, from the
//!   repository's root. A route (`/sum`), a URL and a placeholder (`<module>`, `*`, `…`) are not
//!   paths;
//! - a function or test, written `fn NAME` in a code span: a `fn NAME` in a `.rs` file under
//!   `src/`, `tests/` or `benches/`;
//! - a unit test of the lib, written as the path `cargo test --lib` filters by,
//!   `MODULE::tests::NAME`: a `fn NAME` in that module's file, `src/MODULE.rs` or
//!   `src/MODULE/mod.rs` (`::` between folders);
//! - a constant, `const NAME`, and a macro, `NAME!`: a `const NAME` or `macro_rules! NAME` in
//!   those folders;
//! - a `cargo` command's `--test NAME` or `--bench NAME`: that target's file (`tests/NAME.rs`,
//!   `tests/NAME/main.rs`, `benches/NAME.rs`).
//!
//! Everything missing is listed in one failure.

use std::path::{Path, PathBuf};

/// The guides checked, from the repository's root.
const GUIDES: [&str; 2] = ["docs/adding-a-framework.md", "docs/adding-a-scenario.md"];

/// The endings of the paths checked as files.
const FILE_ENDS: [&str; 7] = [".rs", ".md", ".toml", ".sh", ".txt", ".go", ".py"];

/// The folders at the repository's root that a path in prose starts with.
const TOP: [&str; 7] = [
    "src/",
    "tests/",
    "benches/",
    "docs/",
    "scripts/",
    "peers/",
    "fixtures/",
];

/// The folders whose `.rs` files hold the functions, constants and macros a guide names.
const CODE: [&str; 3] = ["src", "tests", "benches"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The text of `guide` outside its fenced code blocks, as its prose and its code spans, each
/// with its whitespace (line breaks too) made single spaces.
fn prose_and_spans(guide: &str) -> (Vec<String>, Vec<String>) {
    let mut outside = String::new();
    let mut fenced = false;
    for line in guide.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            outside.push_str(line);
            outside.push('\n');
        }
    }
    let (mut prose, mut spans) = (Vec::new(), Vec::new());
    let mut in_span = false;
    for piece in outside.split('`') {
        let piece = piece.split_whitespace().collect::<Vec<_>>().join(" ");
        if in_span {
            spans.push(piece);
        } else {
            prose.push(piece);
        }
        in_span = !in_span;
    }
    (prose, spans)
}

/// The words of `text` that are paths to check (see the module doc).
fn paths(text: &str) -> Vec<&str> {
    text.split(|c: char| c.is_whitespace() || "[](),;\"'".contains(c))
        .filter_map(|word| {
            let word = word.split_once('#').map_or(word, |(path, _)| path);
            let word = word.trim_end_matches(['.', ':']);
            let placeholder = word.contains(['<', '>', '*', '{', '}', '$', '…']);
            if placeholder || word.contains("://") || word.starts_with(['/', '.']) {
                return None;
            }
            let file = word.contains('/') && FILE_ENDS.iter().any(|end| word.ends_with(end));
            (file || word.ends_with('/')).then_some(word)
        })
        .collect()
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The identifier `text` starts with.
fn ident(text: &str) -> &str {
    &text[..text.find(|c: char| !is_ident(c)).unwrap_or(text.len())]
}

/// Whether `text` holds `keyword name` as whole words (`fn name`, `macro_rules! name`).
fn declares(text: &str, keyword: &str, name: &str) -> bool {
    let needle = format!("{keyword} {name}");
    text.match_indices(&needle).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + needle.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// Every `.rs` file under `dir`, with its text.
fn rust_files(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            out.push((path, text));
        }
    }
}

/// What one code span claims exists, or why it does not; `None` when it claims nothing checked.
/// `code` is every `.rs` file of [`CODE`] but this one.
fn check_span(span: &str, code: &[(PathBuf, String)]) -> Option<Result<(), String>> {
    let anywhere =
        |keyword: &str, name: &str| code.iter().any(|(_, text)| declares(text, keyword, name));
    if let Some(rest) = span.strip_prefix("fn ") {
        let name = ident(rest);
        return Some(if anywhere("fn", name) {
            Ok(())
        } else {
            Err(format!("no `fn {name}` under src/, tests/ or benches/"))
        });
    }
    if let Some(rest) = span.strip_prefix("const ") {
        let name = ident(rest);
        return Some(if anywhere("const", name) {
            Ok(())
        } else {
            Err(format!("no `const {name}` under src/, tests/ or benches/"))
        });
    }
    if !span.contains(' ') {
        if let Some((module, test)) = span.rsplit_once("::tests::") {
            let name = ident(test);
            let module = module.strip_prefix("crate::").unwrap_or(module);
            let folders = module.replace("::", "/");
            let files = if module == "crate" {
                vec!["src/lib.rs".to_owned()]
            } else {
                vec![format!("src/{folders}.rs"), format!("src/{folders}/mod.rs")]
            };
            let found = files.iter().any(|file| {
                std::fs::read_to_string(root().join(file))
                    .is_ok_and(|text| declares(&text, "fn", name))
            });
            return Some(if found {
                Ok(())
            } else {
                Err(format!("no `fn {name}` in {}", files.join(" or ")))
            });
        }
        let name = ident(span);
        let bang = &span[name.len()..];
        if !name.is_empty() && (bang == "!" || bang.starts_with("!(")) {
            return Some(if anywhere("macro_rules!", name) {
                Ok(())
            } else {
                Err(format!(
                    "no `macro_rules! {name}` under src/, tests/ or benches/"
                ))
            });
        }
    }
    if span.starts_with("cargo ") {
        let words: Vec<&str> = span.split(' ').collect();
        let mut wrong = Vec::new();
        for pair in words.windows(2) {
            let files = match pair[0] {
                "--test" => vec![
                    format!("tests/{}.rs", pair[1]),
                    format!("tests/{}/main.rs", pair[1]),
                ],
                "--bench" => vec![format!("benches/{}.rs", pair[1])],
                _ => continue,
            };
            if !files.iter().any(|file| root().join(file).is_file()) {
                wrong.push(format!(
                    "`{} {}`: no {}",
                    pair[0],
                    pair[1],
                    files.join(" or ")
                ));
            }
        }
        return Some(if wrong.is_empty() {
            Ok(())
        } else {
            Err(wrong.join("; "))
        });
    }
    None
}

#[test]
fn contributor_guides_name_only_what_exists() {
    let this = root().join(file!());
    let mut code = Vec::new();
    for dir in CODE {
        rust_files(&root().join(dir), &mut code);
    }
    code.retain(|(path, _)| *path != this);
    let mut missing = Vec::new();
    for guide in GUIDES {
        let text =
            std::fs::read_to_string(root().join(guide)).unwrap_or_else(|e| panic!("{guide}: {e}"));
        let (prose, spans) = prose_and_spans(&text);
        let in_prose = prose
            .iter()
            .flat_map(|p| paths(p.as_str()))
            .filter(|path| TOP.iter().any(|top| path.starts_with(top)));
        let named: Vec<&str> = spans
            .iter()
            .flat_map(|s| paths(s.as_str()))
            .chain(in_prose)
            .collect();
        for path in &named {
            if !root().join(path).exists() {
                missing.push(format!("{guide}: `{path}`: no such file or folder"));
            }
        }
        let mut items = 0;
        for span in &spans {
            match check_span(span, &code) {
                Some(Ok(())) => items += 1,
                Some(Err(why)) => missing.push(format!("{guide}: `{span}`: {why}")),
                None => {}
            }
        }
        // A guide that names nothing found here means the reading above broke.
        if named.is_empty() || items == 0 {
            missing.push(format!(
                "{guide}: {} paths and {items} items found: the guide names none, or this \
                 test no longer reads it",
                named.len()
            ));
        }
    }
    assert!(
        missing.is_empty(),
        "the contributor guides name what does not exist ({} cases):\n{}",
        missing.len(),
        missing.join("\n")
    );
}
