//! The module layout stays a tree: no file of `src/` uses, through any number of others, a
//! module that uses it back. A use is any path through `crate::`, `super::` or `self::`, in a
//! `use` (with its `{…}` groups, nested) or inline; it counts against the module it names (the
//! longest one that is a file), and a child's use of its own parent or an ancestor does not count,
//! since the parent declares the child. Issue 24 removed the circles between `allocs` and
//! `bench` (and `bench` and `deltas`), issue 40 the one inside `quick/`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every `.rs` file under `dir`, as (module path, source): `src/quick/mod.rs` is `quick`,
/// `src/quick/hello.rs` is `quick::hello`. The binaries and `lib.rs` are left out.
fn modules(src: &Path) -> BTreeMap<String, String> {
    fn walk(dir: &Path, src: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, src, out);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap().with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if ["main", "bin", "lib"].contains(&parts[0].as_str()) {
                continue;
            }
            if parts.last().is_some_and(|p| p == "mod") {
                parts.pop();
            }
            out.insert(parts.join("::"), std::fs::read_to_string(&path).unwrap());
        }
    }
    let mut out = BTreeMap::new();
    walk(src, src, &mut out);
    out
}

/// `text` without its `//` comments.
fn code(text: &str) -> String {
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The paths of a `use` group's body (`a, b::{c, d}, e as f`), each prefixed with `prefix`.
fn expand(prefix: &[String], body: &str, out: &mut Vec<Vec<String>>) {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&body[start..]);
    for part in parts.into_iter().map(str::trim).filter(|p| !p.is_empty()) {
        let segments = |s: &str| -> Vec<String> {
            s.split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        };
        let mut path = prefix.to_vec();
        if let Some((head, inner)) = part.split_once('{') {
            path.extend(segments(head));
            expand(&path, inner.strip_suffix('}').unwrap_or(inner), out);
        } else {
            path.extend(segments(part.split(" as ").next().unwrap_or(part)));
            out.push(path);
        }
    }
}

/// Every path in `code` that starts at `crate`, `super` or `self`.
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    for root in ["crate", "super", "self"] {
        for (i, _) in code.match_indices(root) {
            if i > 0 && ident(bytes[i - 1] as char) {
                continue;
            }
            // The path: roots and identifiers joined by `::`, then maybe a group.
            let rest = &code[i..];
            let end = rest
                .char_indices()
                .find(|&(_, c)| !(ident(c) || c == ':'))
                .map_or(rest.len(), |(j, _)| j);
            let head = rest[..end].trim_end_matches(':');
            let group = rest[end..].starts_with('{') && rest[..end].ends_with("::");
            if !group && !head.contains("::") {
                continue;
            }
            let segments: Vec<String> = head.split("::").map(str::to_owned).collect();
            if group {
                let body = &rest[end + 1..];
                let mut depth = 1;
                let close = body
                    .char_indices()
                    .find(|&(_, c)| {
                        match c {
                            '{' => depth += 1,
                            '}' => depth -= 1,
                            _ => {}
                        }
                        depth == 0
                    })
                    .map_or(body.len(), |(j, _)| j);
                expand(&segments, &body[..close], &mut out);
            } else {
                out.push(segments);
            }
        }
    }
    out
}

/// Which modules each module uses: every path resolved from the module that holds it to the
/// longest module it names, leaving out itself and its ancestors.
fn uses(modules: &BTreeMap<String, String>) -> BTreeMap<&str, BTreeSet<&str>> {
    let mut out: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (name, text) in modules {
        let me: Vec<&str> = name.split("::").collect();
        for path in paths(&code(text)) {
            let mut full: Vec<&str> = Vec::new();
            let mut rest = path.iter().map(String::as_str).peekable();
            match rest.next() {
                Some("crate") => {}
                Some("self") => full.extend(&me),
                Some("super") => {
                    let mut up = 1;
                    while rest.peek() == Some(&"super") {
                        rest.next();
                        up += 1;
                    }
                    full.extend(&me[..me.len().saturating_sub(up)]);
                }
                _ => continue,
            }
            full.extend(rest);
            let target = (1..=full.len())
                .rev()
                .map(|k| full[..k].join("::"))
                .find_map(|m| modules.get_key_value(&m).map(|(k, _)| k.as_str()));
            let Some(target) = target else { continue };
            let ancestor = name.starts_with(&format!("{target}::"));
            if target != name && !ancestor {
                out.entry(name.as_str()).or_default().insert(target);
            }
        }
    }
    out
}

/// The cycles of `uses`: its strongly connected components of more than one module (Tarjan).
fn cycles<'a>(uses: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Vec<Vec<&'a str>> {
    struct Tarjan<'a, 'b> {
        uses: &'b BTreeMap<&'a str, BTreeSet<&'a str>>,
        index: BTreeMap<&'a str, (usize, usize)>,
        stack: Vec<&'a str>,
        out: Vec<Vec<&'a str>>,
    }
    impl<'a> Tarjan<'a, '_> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, (n, n));
            self.stack.push(v);
            for &w in self.uses.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.index[w].1.min(self.index[v].1);
                    self.index.get_mut(v).unwrap().1 = low;
                } else if self.stack.contains(&w) {
                    let low = self.index[w].0.min(self.index[v].1);
                    self.index.get_mut(v).unwrap().1 = low;
                }
            }
            if self.index[v].0 == self.index[v].1 {
                let at = self.stack.iter().rposition(|&x| x == v).unwrap();
                let component: Vec<&str> = self.stack.split_off(at);
                if component.len() > 1 {
                    self.out.push(component);
                }
            }
        }
    }
    let mut t = Tarjan {
        uses,
        index: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for &v in uses.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.out
}

#[test]
fn no_module_uses_one_that_uses_it_back() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = modules(&src);
    assert!(modules.len() > 40, "{:?}", modules.keys());
    let uses = uses(&modules);
    assert_eq!(cycles(&uses), Vec::<Vec<&str>>::new(), "modules in a cycle");
    // The scan itself finds uses of every kind: `report` reads `paired`'s files, `quick::hello`
    // takes `super::passes`, and the driver's client a grouped `crate::{…}` path.
    assert!(uses["report"].contains("paired"), "{uses:?}");
    assert!(uses["quick::hello"].contains("quick::passes"), "{uses:?}");
    assert!(
        uses["quick::loopback"].contains("quick::passes"),
        "{uses:?}"
    );
}

/// A cycle through three files, each use written a different way (a `use`, an inline path, a
/// nested group), is found; a child's use of its parent is not a use, and a chain is no cycle.
#[test]
fn a_planted_three_module_cycle_is_found() {
    let sources = |files: &[(&str, &str)]| -> BTreeMap<String, String> {
        files
            .iter()
            .map(|(m, t)| ((*m).to_owned(), (*t).to_owned()))
            .collect()
    };
    let planted = sources(&[
        ("a", "use crate::b::Thing;\nmod inner;"),
        ("a::inner", "use super::Parent; // the child of a, using a"),
        ("b", "pub(crate) fn f() { crate::c::g() }"),
        ("c", "use crate::{x::{y, z as w}, a::Back};"),
        ("x", "pub(crate) fn y() {}"),
    ]);
    let uses_planted = uses(&planted);
    assert!(!uses_planted.contains_key("a::inner"), "{uses_planted:?}");
    assert_eq!(uses_planted["c"], BTreeSet::from(["a", "x"]));
    let mut found = cycles(&uses_planted);
    for c in &mut found {
        c.sort_unstable();
    }
    assert_eq!(found, vec![vec!["a", "b", "c"]], "{uses_planted:?}");
    let chain = sources(&[
        ("a", "use crate::b::B;"),
        ("b", "use crate::c::C;"),
        ("c", ""),
    ]);
    assert!(cycles(&uses(&chain)).is_empty());
}

/// The top-level module of a module path: `quick` for `quick::hello`.
fn top(module: &str) -> &str {
    module.split("::").next().unwrap_or(module)
}

/// `uses` between top-level modules, each one node with everything under it.
fn top_uses<'a>(
    uses: &BTreeMap<&'a str, BTreeSet<&'a str>>,
) -> BTreeMap<&'a str, BTreeSet<&'a str>> {
    let mut out: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (from, to) in uses {
        for t in to {
            if top(from) != top(t) {
                out.entry(top(from)).or_default().insert(top(t));
            }
        }
    }
    out
}

/// The layers hold at the top too: no top-level module (a file of `src/` or a folder with all
/// it holds) uses, through any number of others, one that uses it back. Issue 56 broke the
/// circle of cell, check, h2c, http1 and oracle: the oracle is data, what sends it is
/// `protocol`'s.
#[test]
fn no_top_level_module_uses_one_that_uses_it_back() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = modules(&src);
    let top = top_uses(&uses(&modules));
    assert_eq!(
        cycles(&top),
        Vec::<Vec<&str>>::new(),
        "top-level modules in a cycle"
    );
    assert!(top["check"].contains("protocol"), "{top:?}");
    assert!(!top["oracle"].contains("protocol"), "{top:?}");
    // Planted: two children that use each other's parents make their parents a cycle.
    let planted: BTreeMap<String, String> = [
        ("a", "mod x;"),
        ("a::x", "use crate::b::y::Thing;"),
        ("b", "mod y;"),
        ("b::y", "fn f() { crate::a::g() }"),
    ]
    .iter()
    .map(|(m, t)| ((*m).to_owned(), (*t).to_owned()))
    .collect();
    let planted_uses = uses(&planted);
    assert!(cycles(&planted_uses).is_empty(), "{planted_uses:?}");
    let mut found = cycles(&top_uses(&planted_uses));
    found.iter_mut().for_each(|c| c.sort_unstable());
    assert_eq!(found, vec![vec!["a", "b"]]);
}

/// `code` (comments already out) without its string and character literals, so that a name in
/// a message is not a use of it.
fn without_strings(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '"' {
            out.push(c);
            continue;
        }
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => break,
                _ => {}
            }
        }
        out.push_str("\"\"");
    }
    out
}

/// The variants of `pub enum Protocol` in `src/options.rs`.
fn protocol_variants(text: &str) -> Vec<String> {
    let body = text
        .split("pub enum Protocol {")
        .nth(1)
        .and_then(|rest| rest.split('}').next())
        .expect("pub enum Protocol in src/options.rs");
    code(body)
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.trim_end_matches(',').to_owned())
        .collect()
}

/// `word`'s parts, lower-cased: split at `_` and where a capital follows a small letter
/// (`LoopbackH2c` is `loopback`, `h2c`; `H2C_RULES` is `h2c`, `rules`).
fn parts(word: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut prev_small = false;
    for c in word.chars() {
        if c == '_' || (c.is_uppercase() && prev_small) {
            out.push(String::new());
        }
        if c != '_' {
            out.last_mut().unwrap().push(c.to_ascii_lowercase());
        }
        prev_small = c.is_lowercase();
    }
    out.retain(|p| !p.is_empty());
    out
}

/// Where `text` names a protocol by one of `variants`: `Protocol::H2c`, or an identifier spelt
/// after a variant (`H2C`, `LoopbackH2c`, `precheck_h2c`), outside comments and strings. A
/// module path is not one (`protocol::h2c::Client` is the protocol module's own client).
fn names_a_protocol(text: &str, variants: &[String]) -> Vec<String> {
    let code = without_strings(&code(text));
    let variants: Vec<String> = variants.iter().map(|v| v.to_ascii_lowercase()).collect();
    code.split(|c: char| !ident(c))
        .filter(|w| {
            let parts = parts(w);
            let module = parts.len() == 1 && !w.contains(char::is_uppercase);
            !module && parts.iter().any(|p| variants.contains(p))
        })
        .map(str::to_owned)
        .collect()
}

/// A protocol is one module: outside `src/protocol/`, `src/frameworks/` (each file's `PROTOCOLS`
/// line) and the CLI's argument types (`src/options.rs`, which declares the enum, and
/// `src/cmd/args.rs`), no file names a variant of the protocol enum or an identifier spelt after
/// one. Adding a protocol touches those places only.
#[test]
fn only_the_protocol_module_names_a_protocol() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let variants = protocol_variants(&std::fs::read_to_string(src.join("options.rs")).unwrap());
    assert_eq!(variants, ["Http1", "H2c", "H2", "Ws"]);
    let mut offending = Vec::new();
    for (module, text) in modules(&src) {
        let allowed = ["protocol", "frameworks"].contains(&top(&module))
            || ["options", "cmd::args"].contains(&module.as_str());
        let found = names_a_protocol(&text, &variants);
        if !allowed && !found.is_empty() {
            offending.push(format!("{module}: {}", found.join(", ")));
        }
    }
    assert_eq!(offending, Vec::<String>::new());
    // Planted: each spelling is found, and a comment or a message is not a use.
    let planted = "use crate::protocol::Protocol;\nconst H2C_RULES: u8 = 0; // Protocol::H2c\n\
                   fn precheck_h2c() { let _ = (Protocol::Http1, Mode::LoopbackH2c, \"h2c: H2C\"); }";
    assert_eq!(
        names_a_protocol(planted, &variants),
        ["H2C_RULES", "precheck_h2c", "Http1", "LoopbackH2c"]
    );
}
