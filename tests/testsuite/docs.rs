//! The docs agree with the code: the README's generated blocks (the framework table from
//! `framebench list --markdown`, the first screen from `docs/generated/quick/screen.md`, the
//! newcomer's times from `docs/generated/fresh-clone.md`) are current, every generated file names
//! what produced it, and the methodology has a row for every framework. Each failure says the
//! command that makes it current again (`scripts/readme.sh` rewrites the README's blocks).

use std::path::Path;
use std::process::Command;

use framebench::frameworks::{ENTRIES, REGISTRY};

/// The generated files the README quotes whole but for their stamp line, each between the lines
/// `<!-- FILE: begin -->` and `<!-- FILE: end -->`: the quick compare's first screen, and the
/// newcomer's time box that scripts/fresh-clone.sh writes.
const QUOTED: [&str; 3] = [
    "docs/generated/quick/screen.md",
    "docs/generated/fresh-clone.md",
    "docs/history/ab-patch.md",
];

/// `file`, from the repository's root.
fn read(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The lines of `text` between the line `begin` and the line `end`, each line with its newline.
fn block<'a>(text: &'a str, begin: &str, end: &str, file: &str) -> &'a str {
    text.split_once(&format!("{begin}\n"))
        .and_then(|(_, rest)| rest.split_once(&format!("\n{end}")))
        .map(|(inside, _)| inside)
        .unwrap_or_else(|| panic!("{file} has no `{begin}` … `{end}` block"))
}

/// The docs that may hold generated blocks: README.md and the guides (not docs/generated/,
/// whose files are written whole).
fn guides() -> Vec<String> {
    let mut docs = vec!["README.md".to_owned()];
    for dir in ["docs", "docs/methodology"] {
        let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        let mut names: Vec<String> = std::fs::read_dir(&full)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".md"))
            .map(|n| format!("{dir}/{n}"))
            .collect();
        names.sort();
        docs.extend(names);
    }
    docs
}

/// Every `<!-- framebench ARGS: begin -->` … `<!-- framebench ARGS: end -->` block of the guides
/// is the output of `framebench ARGS` now (inside a ```text fence when the block opens one): the
/// README's framework table (`list --markdown`) and usage.md's diff example, recomputed from the
/// committed results. With some framework features off (a partial build), each line of the
/// output is one of the block's.
#[test]
fn framebench_blocks_are_current() {
    let full = REGISTRY.len() == ENTRIES;
    let mut blocks = 0;
    for doc in guides() {
        let text = read(&doc);
        for line in text.lines() {
            let Some(args) = line
                .strip_prefix("<!-- framebench ")
                .and_then(|l| l.strip_suffix(": begin -->"))
            else {
                continue;
            };
            blocks += 1;
            let end = format!("<!-- framebench {args}: end -->");
            let inside = block(&text, line, &end, &doc);
            let out = Command::new(env!("CARGO_BIN_EXE_framebench"))
                .args(args.split_whitespace())
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .output()
                .unwrap();
            assert!(out.status.success(), "framebench {args}: {out:?}");
            let want = String::from_utf8(out.stdout).unwrap();
            let got = match inside.strip_prefix("```text\n") {
                Some(fenced) => fenced.strip_suffix("```").unwrap_or(fenced),
                None => inside,
            };
            let stale = format!(
                "{doc}: the output of `framebench {args}` has changed: run scripts/readme.sh"
            );
            if full {
                assert_eq!(
                    got.trim_end_matches('\n'),
                    want.trim_end_matches('\n'),
                    "{stale}"
                );
            } else {
                for row in want.lines() {
                    assert!(got.lines().any(|l| l == row), "{stale}: {row}");
                }
            }
        }
    }
    assert!(
        blocks >= 2,
        "the README's table and usage.md's diff example: {blocks} blocks"
    );
}

/// README.md quotes each generated file of [`QUOTED`] whole, but for the file's stamp line: the
/// commit and window it was measured in, then what it measured.
#[test]
fn readme_quotes_are_generated() {
    let readme = read("README.md");
    for file in QUOTED {
        let (begin, end) = (
            format!("<!-- {file}: begin -->"),
            format!("<!-- {file}: end -->"),
        );
        let quoted = block(&readme, &begin, &end, "README.md");
        let text = read(file);
        let (stamp, body) = text.split_once('\n').unwrap();
        assert!(
            stamp.starts_with("<!-- generated by `") && stamp.ends_with("do not edit -->"),
            "{file} has no stamp: {stamp}"
        );
        assert!(body.starts_with("Measured at: "), "{file}: {body}");
        assert!(body.contains("\nWindow: "), "{file}: {body}");
        assert_eq!(
            quoted,
            body.trim_end_matches('\n'),
            "README.md's copy of {file} is stale: run scripts/readme.sh"
        );
    }
}

/// Every guide's `<!-- docs/generated/FILE: begin -->` … `end` block (or a docs/history/ FILE,
/// a dated run a script wrote) is FILE less its stamp line, as scripts/readme.sh copies it: a
/// guide quotes a measured figure only so.
#[test]
fn guides_quote_generated_files_whole() {
    for doc in guides() {
        let text = read(&doc);
        for line in text.lines() {
            // A generated file, or a dated run of docs/history/ written by a script.
            let Some(file) = line
                .strip_prefix("<!-- ")
                .and_then(|l| l.strip_suffix(": begin -->"))
                .filter(|f| f.starts_with("docs/generated/") || f.starts_with("docs/history/"))
            else {
                continue;
            };
            let quoted = block(&text, line, &format!("<!-- {file}: end -->"), &doc);
            let generated = read(file);
            let body = generated.split_once('\n').map_or("", |(_, b)| b);
            assert_eq!(
                quoted,
                body.trim_end_matches('\n'),
                "{doc}'s copy of {file} is stale: run scripts/readme.sh"
            );
        }
    }
}

/// The first cells of the markdown table under `heading` in `docs/methodology/{file}`.
fn methodology_rows(file: &str, heading: &str) -> Vec<String> {
    let doc = read(&format!("docs/methodology/{file}"));
    let section = doc
        .split(&format!("\n{heading}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("docs/methodology/{file} has no `{heading}`"));
    section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.split('|').nth(1).map(str::to_owned))
        .collect()
}

/// Each framework's methodology paragraph: a row in the table of what its in-process call
/// includes (when it has one) and in the table of what `--threads` means for its server.
#[test]
fn methodology_describes_every_entry() {
    let in_process = methodology_rows("in-process.md", "## In-process");
    let threads = methodology_rows("loopback.md", "## Threads and keep-alive");
    for e in REGISTRY {
        let name = format!("`{}`", e.name);
        if e.in_process {
            assert!(
                in_process.iter().any(|cell| cell.contains(&name)),
                "{} has no row in docs/methodology/in-process.md's in-process table",
                e.name
            );
        }
        if e.loopback {
            assert!(
                threads.iter().any(|cell| cell.contains(&name)),
                "{} has no row in docs/methodology/loopback.md's threads table",
                e.name
            );
        }
    }
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// Every file a command wrote into docs/generated/ names what produced it: a Markdown file on
/// its first line, an SVG chart before its root, a JSON file in its `generated_by` field
/// (docs/generated/README.md, the one hand-written file there, says how). A PNG plot holds no
/// text; the Markdown file of the same name names its command.
#[test]
fn every_generated_file_names_what_produced_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/generated");
    let mut unstamped = Vec::new();
    for path in files_under(&root) {
        let name = path.strip_prefix(&root).unwrap().display().to_string();
        let stamped = match path.extension().and_then(|e| e.to_str()) {
            _ if name == "README.md" => true,
            Some("md") => std::fs::read_to_string(&path)
                .unwrap()
                .starts_with("<!-- generated by "),
            Some("svg") => std::fs::read_to_string(&path)
                .unwrap()
                .starts_with("<!-- generated by "),
            Some("json") => std::fs::read_to_string(&path)
                .unwrap()
                .contains("\"generated_by\""),
            Some("png") => path.with_extension("md").exists(),
            _ => false,
        };
        if !stamped {
            unstamped.push(name);
        }
    }
    assert!(
        unstamped.is_empty(),
        "files in docs/generated/ that do not name what produced them: {unstamped:?}"
    );
}

/// One publication, one commit (`scripts/publish.sh`): every Markdown file in docs/generated/
/// names the commit it was measured at on a `Measured at: <40 hex>` line within its first 30
/// lines, and every one names the same commit, but for the files that need a lent many-core
/// machine, which keep their own and say so in their names (`16-cpus`), and the footprint
/// (scripts/footprint.sh, 45 minutes of builds), which keeps its own while Cargo.lock,
/// Cargo.toml and src/frameworks/ are unchanged since.
#[test]
fn every_published_file_names_one_commit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/generated");
    let measured_at = |text: &str| {
        text.lines().take(30).find_map(|l| {
            let at = l.find("Measured at: ")? + "Measured at: ".len();
            let hex: String = l[at..]
                .chars()
                .take_while(char::is_ascii_hexdigit)
                .collect();
            (hex.len() == 40).then_some(hex)
        })
    };
    let mut commits: Vec<(String, String)> = Vec::new();
    let mut unnamed = Vec::new();
    for path in files_under(&root) {
        let name = path.strip_prefix(&root).unwrap().display().to_string();
        if path.extension().is_none_or(|e| e != "md") || name == "README.md" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        match measured_at(&text) {
            Some(sha) => commits.push((name, sha)),
            None => unnamed.push(name),
        }
    }
    assert!(
        unnamed.is_empty(),
        "no `Measured at: <full sha>` in the first 30 lines of: {unnamed:?}"
    );
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (name, sha) in commits.iter().filter(|(n, _)| n.contains("footprint")) {
        let unchanged = std::process::Command::new("git")
            .args(["diff", "--quiet", sha, "HEAD", "--"])
            .args(["Cargo.lock", "Cargo.toml", "src/frameworks"])
            .current_dir(repo)
            .status()
            .unwrap();
        assert!(
            unchanged.success(),
            "{name} was measured at {}, and Cargo.lock, Cargo.toml or src/frameworks/ changed \
             since: rerun scripts/footprint.sh",
            &sha[..7]
        );
    }
    let published: Vec<&(String, String)> = commits
        .iter()
        .filter(|(n, _)| !n.contains("16-cpus") && !n.contains("footprint"))
        .collect();
    let first = &published.first().expect("a published file").1;
    let other: Vec<String> = published
        .iter()
        .filter(|(_, sha)| sha != first)
        .map(|(n, sha)| format!("{n} at {}", &sha[..7]))
        .collect();
    assert!(
        other.is_empty(),
        "docs/generated/ mixes commits: most name {}, these another: {other:?}",
        &first[..7]
    );
}

/// The guides that hold no measured figure outside a generated block: each number with a unit
/// there is a parameter (a bound, a batch, a rate asked for) listed in docs/prose-parameters.txt,
/// sits in a generated block, which a test recomputes from committed data, or in a blockquote
/// (`> `), which quotes an outside source it names. Dated measurements live in history.md and
/// docs/history/, each under its commit.
fn figure_free() -> Vec<String> {
    guides()
        .into_iter()
        .filter(|g| g != "docs/history.md")
        .collect()
}

#[test]
fn guides_quote_no_measured_figure_by_hand() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let allowed = read("docs/prose-parameters.txt");
    let allowed: Vec<&str> = allowed
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    let units = [
        "µs",
        "ms",
        "ns",
        "s",
        "min",
        "minutes",
        "k",
        "k/s",
        "req/s",
        "%",
        "×",
        "KiB",
        "MiB",
        "MB",
        "GiB",
        "columns",
        "requests",
        "connections",
        "crates",
        "tests",
    ];
    let mut found = Vec::new();
    for file in figure_free() {
        let text = std::fs::read_to_string(root.join(&file)).unwrap();
        let mut generated = false;
        for line in text.lines() {
            if line.starts_with("<!-- ") && line.ends_with(": begin -->") {
                generated = true;
            }
            if line.starts_with("<!-- ") && line.ends_with(": end -->") {
                generated = false;
                continue;
            }
            if generated || line.starts_with('>') {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            for (i, w) in words.iter().enumerate() {
                let number = w.trim_start_matches(['(', '`']);
                if !number.starts_with(|c: char| c.is_ascii_digit()) {
                    continue;
                }
                let digits: String = number
                    .chars()
                    .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ',')
                    .collect();
                let rest = &number[digits.len()..];
                let unit = if rest.is_empty() {
                    words.get(i + 1).copied().unwrap_or("")
                } else {
                    rest
                };
                let unit = unit.trim_end_matches([')', ',', '.', ';', ':', '`']);
                if units.contains(&unit) {
                    let token = format!("{file}: {} {unit}", digits.trim_end_matches(['.', ',']));
                    if !allowed.contains(&token.as_str()) {
                        found.push(token);
                    }
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "numbers with units outside generated blocks and not in docs/prose-parameters.txt \
         (a measured figure belongs in a generated block; a parameter in that list): {found:#?}"
    );
}
