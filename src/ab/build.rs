//! The two builds of `ab --patch`: framebench's own source behind a scratch copy of its
//! manifest, one pointing the patched crate at the pinned release and one at the checkout,
//! built with only the features of the frameworks measured, in one target folder they share.
//!
//! The user's trees are never written: the scratch folder holds `Cargo.toml` and `Cargo.lock`
//! of its own, and links to everything else of framebench's source (src/, build.rs, fixtures/,
//! …), so that a binary built there finds its fixtures as one built in the source does.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use toml_edit::{DocumentMut, InlineTable, Item, Table, Value};

use super::checkout::{cargo, last_error, same_name, Checkout};
use crate::error::usage;

/// One side's scratch folder: its manifest, lock and built binaries.
pub(crate) struct Side {
    /// `base` or `new`.
    pub(crate) name: &'static str,
    /// The folder.
    pub(crate) dir: PathBuf,
    /// What its manifest changed against framebench's, one item per change.
    pub(crate) changes: Vec<String>,
}

/// A finished build.
pub(crate) struct Built {
    /// Its `framebench` (its `framebench-callgrind-cell` lies beside it).
    pub(crate) exe: PathBuf,
    /// How long cargo took.
    pub(crate) took: Duration,
}

/// framebench's source, where this binary was built from.
pub(crate) fn source() -> anyhow::Result<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    if !dir.join("Cargo.toml").is_file() || !dir.join("src").is_dir() {
        return Err(usage(format!(
            "ab --patch builds framebench from its source, and {} is gone: run it from a \
             framebench checkout",
            dir.display()
        )));
    }
    Ok(dir)
}

impl Side {
    /// Makes `scratch/<folder>` for the side `name`: framebench's manifest, with `checkout` patched in when given,
    /// framebench's Cargo.lock, and a link to every other entry of the source.
    pub(crate) fn prepare(
        (name, folder): (&'static str, &str),
        scratch: &Path,
        source: &Path,
        checkout: Option<&Checkout>,
        pinned: &str,
    ) -> anyhow::Result<Side> {
        let dir = scratch.join(folder);
        std::fs::create_dir_all(&dir)
            .map_err(|e| anyhow::anyhow!("creating {}: {e}", dir.display()))?;
        for entry in std::fs::read_dir(source)? {
            let entry = entry?;
            let file = entry.file_name();
            if ["Cargo.toml", "Cargo.lock", "target"].contains(&file.to_string_lossy().as_ref()) {
                continue;
            }
            let link = dir.join(&file);
            if link.symlink_metadata().is_err() {
                std::os::unix::fs::symlink(entry.path(), &link)
                    .map_err(|e| anyhow::anyhow!("linking {}: {e}", link.display()))?;
            }
        }
        let mut doc: DocumentMut = std::fs::read_to_string(source.join("Cargo.toml"))?
            .parse()
            .map_err(|e| anyhow::anyhow!("framebench's Cargo.toml: {e}"))?;
        let changes = match checkout {
            Some(c) => patched(&mut doc, c, pinned)?,
            None => Vec::new(),
        };
        tagged(&mut doc, folder)?;
        let text = doc.to_string();
        // The lock starts as framebench's. The new side's build then moves what the checkout
        // needs; that lock is kept while neither the manifest nor framebench's lock changes, so
        // that a second run does not rebuild (the build script reruns on a touched lock).
        let lock = tagged_lock(&std::fs::read_to_string(source.join("Cargo.lock"))?, folder)?;
        let manifest_changed = write_if_changed(&dir.join("Cargo.toml"), &text)?;
        let lock_changed = write_if_changed(&dir.join("Cargo.lock.framebench"), &lock)?;
        if manifest_changed || lock_changed || !dir.join("Cargo.lock").is_file() {
            std::fs::write(dir.join("Cargo.lock"), &lock)?;
        }
        Ok(Side { name, dir, changes })
    }

    /// Builds both binaries with `features` into `target`: `--locked` for a side without a
    /// patch, so that its lock is framebench's. A build that fails is one line: the first error
    /// and the log to read.
    pub(crate) fn build(
        &self,
        target: &Path,
        features: &[&str],
        locked: bool,
    ) -> anyhow::Result<Built> {
        let log = self.dir.join("build.log");
        let started = Instant::now();
        let mut cmd = cargo();
        cmd.args(["build", "--release", "--bins", "--no-default-features"])
            .arg("--manifest-path")
            .arg(self.dir.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(target);
        if !features.is_empty() {
            cmd.arg("--features").arg(features.join(","));
        }
        if locked {
            cmd.arg("--locked");
        }
        let out = cmd
            .output()
            .map_err(|e| anyhow::anyhow!("running cargo build: {e}"))?;
        let took = started.elapsed();
        std::fs::write(&log, [&out.stdout[..], &out.stderr[..]].concat())?;
        if !out.status.success() {
            return Err(usage(format!(
                "the {} build does not compile: {} (log: {})",
                self.name,
                last_error(&String::from_utf8_lossy(&out.stderr)),
                log.display()
            )));
        }
        // Both builds write one target folder: keep this side's binaries apart.
        let bin = self.dir.join("bin");
        std::fs::create_dir_all(&bin)?;
        for name in ["framebench", crate::bench::callgrind::CELL_BIN] {
            std::fs::copy(target.join("release").join(name), bin.join(name))
                .map_err(|e| anyhow::anyhow!("copying the {} build's {name}: {e}", self.name))?;
        }
        Ok(Built {
            exe: bin.join("framebench"),
            took,
        })
    }

    /// The packages of this side's lock that are not in `other`'s, as `name version`, leaving
    /// out the checkout's own members: what else the patch moved.
    pub(crate) fn moved_against(&self, other: &Side, members: &[(String, PathBuf)]) -> Vec<String> {
        let (mine, theirs) = (locked(&self.dir), locked(&other.dir));
        mine.iter()
            .filter(|p| !theirs.contains(p))
            // framebench itself differs by its side's tag ([`tagged`]).
            .filter(|(n, _)| n != "framebench" && !members.iter().any(|(m, _)| same_name(m, n)))
            .map(|(n, v)| format!("{n} {v}"))
            .collect()
    }
}

/// Writes `text` to `path` unless it holds it already, and says whether it wrote: framebench's
/// build script reruns when its manifest or lock is touched, and a rerun rebuilds framebench
/// (52 s here) for nothing.
fn write_if_changed(path: &Path, text: &str) -> anyhow::Result<bool> {
    if std::fs::read_to_string(path).is_ok_and(|t| t == text) {
        return Ok(false);
    }
    std::fs::write(path, text).map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
    Ok(true)
}

/// `(name, version)` of every package in `dir`'s Cargo.lock.
fn locked(dir: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(dir.join("Cargo.lock")).unwrap_or_default();
    let Ok(doc) = text.parse::<DocumentMut>() else {
        return Vec::new();
    };
    let Some(packages) = doc.get("package").and_then(Item::as_array_of_tables) else {
        return Vec::new();
    };
    packages
        .iter()
        .filter_map(|p| {
            let s = |k: &str| p.get(k).and_then(Item::as_str).map(str::to_owned);
            Some((s("name")?, s("version")?))
        })
        .collect()
}

/// framebench's version tagged by the side: `0.1.0+ab-base`.
fn tag(version: &str, side: &str) -> Item {
    toml_edit::value(format!("{version}+ab-{side}"))
}

/// The manifest with framebench's version tagged by the side ([`tag`]). cargo leaves a local
/// package's folder out of its build hashes, so without the tag both sides' build scripts share
/// one output folder in the shared target folder, and each build reran the script and rebuilt
/// framebench after the other side's build (a minute each here).
fn tagged(doc: &mut DocumentMut, side: &str) -> anyhow::Result<()> {
    let version = doc
        .get("package")
        .and_then(|p| p.get("version"))
        .and_then(Item::as_str)
        .ok_or_else(|| anyhow::anyhow!("framebench's Cargo.toml has no package version"))?;
    doc["package"]["version"] = tag(version, side);
    Ok(())
}

/// Cargo.lock with framebench's own entry at [`tagged`]'s version, so that the base side still
/// builds `--locked`.
fn tagged_lock(lock: &str, side: &str) -> anyhow::Result<String> {
    let mut doc: DocumentMut = lock
        .parse()
        .map_err(|e| anyhow::anyhow!("framebench's Cargo.lock: {e}"))?;
    let own = doc
        .get_mut("package")
        .and_then(Item::as_array_of_tables_mut)
        .and_then(|packages| {
            packages
                .iter_mut()
                .find(|p| p.get("name").and_then(Item::as_str) == Some("framebench"))
        })
        .ok_or_else(|| anyhow::anyhow!("framebench's Cargo.lock has no framebench"))?;
    let version = own.get("version").and_then(Item::as_str).unwrap_or("0.0.0");
    own["version"] = tag(version, side);
    Ok(doc.to_string())
}

/// framebench's manifest with the checkout patched in: the dependency on the crate at the
/// `pinned` version points at the checkout's folder, whatever version it declares, and every
/// member of its workspace is a `[patch.crates-io]` entry, so that crates of the graph that
/// use one take the checkout's. Returns what changed.
fn patched(
    doc: &mut DocumentMut,
    checkout: &Checkout,
    pinned: &str,
) -> anyhow::Result<Vec<String>> {
    let mut changes = Vec::new();
    let deps = doc
        .get_mut("dependencies")
        .and_then(Item::as_table_like_mut)
        .ok_or_else(|| anyhow::anyhow!("framebench's Cargo.toml has no [dependencies]"))?;
    for (key, item) in deps.iter_mut() {
        let Some(spec) = item.as_value_mut() else {
            continue;
        };
        let package = spec
            .as_inline_table()
            .and_then(|t| t.get("package"))
            .and_then(Value::as_str)
            .unwrap_or(key.get())
            .to_owned();
        if !same_name(&package, &checkout.krate) || !requires(spec, pinned) {
            continue;
        }
        let mut table = match spec {
            Value::InlineTable(t) => t.clone(),
            _ => InlineTable::new(),
        };
        let was = table
            .remove("version")
            .or_else(|| Some(spec.clone()))
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        table.insert("path", checkout.dir().to_string_lossy().as_ref().into());
        *spec = Value::InlineTable(table);
        changes.push(format!(
            "{key} = \"{was}\" → path {} ({} {})",
            checkout.dir().display(),
            checkout.krate,
            checkout.version
        ));
    }
    if changes.is_empty() {
        changes.push(format!(
            "no dependency of framebench's is {} {pinned}: the crates that use it take the \
             checkout through [patch.crates-io] where its version {} meets their requirement",
            checkout.krate, checkout.version
        ));
    }
    let patch = doc
        .entry("patch")
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_mut()
        .ok_or_else(|| anyhow::anyhow!("framebench's Cargo.toml: [patch] is not a table"))?;
    patch.set_implicit(true);
    let crates_io = patch
        .entry("crates-io")
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_mut()
        .ok_or_else(|| anyhow::anyhow!("[patch.crates-io] is not a table"))?;
    let mut members: Vec<&str> = Vec::new();
    for (name, dir) in &checkout.members {
        let mut t = InlineTable::new();
        t.insert("path", dir.to_string_lossy().as_ref().into());
        crates_io.insert(name, Item::Value(Value::InlineTable(t)));
        members.push(name);
    }
    changes.push(format!(
        "[patch.crates-io]: {} from the checkout",
        members.join(", ")
    ));
    Ok(changes)
}

/// Whether the dependency `spec` asks for the `pinned` version: `"=0.8.9"`, `"0.8"`, `"4"`.
fn requires(spec: &Value, pinned: &str) -> bool {
    let req = match spec {
        Value::String(s) => Some(s.value().as_str()),
        Value::InlineTable(t) => t.get("version").and_then(Value::as_str),
        _ => None,
    };
    let Some(req) = req else {
        return false;
    };
    match req.strip_prefix('=') {
        Some(exact) => exact.trim() == pinned,
        None => {
            let req = req.trim_start_matches(['^', '~']).trim();
            pinned == req || pinned.starts_with(&format!("{req}."))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = r#"[package]
name = "framebench"
version = "0.1.0"

[dependencies]
hyper = { version = "=1.12.0", features = ["server"] }
axum = { version = "=0.8.9", default-features = false, optional = true }
axum07 = { package = "axum", version = "=0.7.9", optional = true }
actix-http = { version = "3", optional = true }
"#;

    /// [`patched`] on [`MANIFEST`]: the text and what changed.
    fn patch(c: &Checkout, pinned: &str) -> anyhow::Result<(String, Vec<String>)> {
        let mut doc: DocumentMut = MANIFEST.parse().unwrap();
        let changes = patched(&mut doc, c, pinned)?;
        Ok((doc.to_string(), changes))
    }

    fn checkout(krate: &str, version: &str, members: &[&str]) -> Checkout {
        Checkout {
            krate: krate.into(),
            version: version.into(),
            members: members
                .iter()
                .map(|m| ((*m).to_owned(), PathBuf::from(format!("/co/{m}"))))
                .collect(),
        }
    }

    #[test]
    fn the_pinned_dependency_points_at_the_checkout_and_its_workspace_is_patched() {
        let c = checkout("axum", "0.9.0", &["axum", "axum-core"]);
        let (text, changes) = patch(&c, "0.8.9").unwrap();
        let doc: DocumentMut = text.parse().unwrap();
        let axum = doc["dependencies"]["axum"].as_inline_table().unwrap();
        assert_eq!(axum.get("path").and_then(Value::as_str), Some("/co/axum"));
        assert!(axum.get("version").is_none());
        assert_eq!(axum.get("optional").and_then(Value::as_bool), Some(true));
        // The other pin of the same crate is left as it was.
        let axum07 = doc["dependencies"]["axum07"].as_inline_table().unwrap();
        assert_eq!(
            axum07.get("version").and_then(Value::as_str),
            Some("=0.7.9")
        );
        assert_eq!(
            doc["patch"]["crates-io"]["axum-core"]["path"].as_str(),
            Some("/co/axum-core")
        );
        assert_eq!(changes.len(), 2, "{changes:?}");
        // Everything else is kept as written.
        assert!(text.contains("hyper = { version = \"=1.12.0\", features = [\"server\"] }"));
    }

    #[test]
    fn each_side_tags_framebench_s_version_and_keeps_the_rest() {
        let mut doc: DocumentMut = MANIFEST.parse().unwrap();
        tagged(&mut doc, "base").unwrap();
        let text = doc.to_string();
        assert!(
            text.contains("name = \"framebench\"\nversion = \"0.1.0+ab-base\""),
            "{text}"
        );
        assert!(text.contains("axum = { version = \"=0.8.9\""), "{text}");
    }

    #[test]
    fn a_renamed_dependency_and_a_caret_requirement_are_found_by_package_and_version() {
        let c = checkout("axum", "0.7.10", &["axum"]);
        let (text, _) = patch(&c, "0.7.9").unwrap();
        let doc: DocumentMut = text.parse().unwrap();
        assert!(doc["dependencies"]["axum07"]["path"].as_str().is_some());
        assert!(doc["dependencies"]["axum"]["version"].as_str().is_some());
        let c = checkout("actix-http", "3.12.0", &["actix-http"]);
        assert!(patch(&c, "3.11.2").is_ok());
        let c = checkout("tokio", "1.0.0", &["tokio"]);
        let (_, changes) = patch(&c, "1.0.0").unwrap();
        assert!(changes[0].starts_with("no dependency"), "{changes:?}");
    }
}
