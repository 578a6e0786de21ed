//! The author's checkout that `ab --patch CRATE=PATH` measures: the crate and its workspace as
//! `cargo metadata` reads them, the registry entry it stands in for, and, for `--base REV`, a
//! git worktree of another revision of it.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

use crate::error::usage;
use crate::framework::Entry;

/// `CRATE=PATH`, as `--patch` takes it.
#[derive(Debug, Clone)]
pub(crate) struct Patch {
    /// The crate's name as in Cargo.lock (`axum`, `actix-web`).
    pub(crate) krate: String,
    /// The crate's folder or its workspace's.
    pub(crate) path: PathBuf,
}

/// clap's value parser for `--patch`.
pub(crate) fn parse_patch(text: &str) -> Result<Patch, String> {
    match text.split_once('=') {
        Some((krate, path)) if !krate.is_empty() && !path.is_empty() => Ok(Patch {
            krate: krate.to_owned(),
            path: PathBuf::from(path),
        }),
        _ => Err(format!("'{text}': expected CRATE=PATH, e.g. axum=../axum")),
    }
}

/// What `cargo metadata --no-deps` says of a workspace: only what is read here.
#[derive(Deserialize)]
struct Metadata {
    packages: Vec<Package>,
}

/// One package of [`Metadata`].
#[derive(Deserialize)]
struct Package {
    name: String,
    version: String,
    manifest_path: PathBuf,
}

/// A crate's checkout and the workspace around it.
#[derive(Debug, Clone)]
pub(crate) struct Checkout {
    /// The crate's name.
    pub(crate) krate: String,
    /// The version its manifest declares.
    pub(crate) version: String,
    /// Every member of its workspace, itself included: name and folder. Each one the build's
    /// graph uses is patched with it, so that no two copies of one crate meet.
    pub(crate) members: Vec<(String, PathBuf)>,
}

impl Checkout {
    /// Reads the checkout of `patch`: one line of bad input when PATH is not that crate or its
    /// workspace.
    pub(crate) fn read(patch: &Patch) -> anyhow::Result<Checkout> {
        let manifest = patch.path.join("Cargo.toml");
        if !manifest.is_file() {
            return Err(usage(format!(
                "{}: no Cargo.toml there; --patch {}=PATH takes the crate's folder or its \
                 workspace's",
                patch.path.display(),
                patch.krate
            )));
        }
        let out = cargo()
            .args([
                "metadata",
                "--format-version",
                "1",
                "--no-deps",
                "--offline",
            ])
            .arg("--manifest-path")
            .arg(&manifest)
            .output()
            .map_err(|e| anyhow::anyhow!("running cargo metadata: {e}"))?;
        if !out.status.success() {
            return Err(usage(format!(
                "{}: cargo cannot read it: {}",
                patch.path.display(),
                last_error(&String::from_utf8_lossy(&out.stderr))
            )));
        }
        let metadata: Metadata = serde_json::from_slice(&out.stdout)
            .map_err(|e| anyhow::anyhow!("reading cargo metadata's output: {e}"))?;
        let members: Vec<(String, PathBuf)> = metadata
            .packages
            .iter()
            .map(|p| {
                let dir = p.manifest_path.parent().unwrap_or(Path::new("/"));
                (p.name.clone(), dir.to_owned())
            })
            .collect();
        let Some(own) = metadata
            .packages
            .iter()
            .find(|p| same_name(&p.name, &patch.krate))
        else {
            let names: Vec<&str> = members.iter().map(|(n, _)| n.as_str()).collect();
            return Err(usage(format!(
                "{} is not the crate {}: its workspace holds {}",
                patch.path.display(),
                patch.krate,
                names.join(", ")
            )));
        };
        Ok(Checkout {
            krate: own.name.clone(),
            version: own.version.clone(),
            members,
        })
    }

    /// The crate's own folder.
    pub(crate) fn dir(&self) -> &Path {
        self.members
            .iter()
            .find(|(n, _)| *n == self.krate)
            .map(|(_, d)| d.as_path())
            .expect("the crate is a member of its workspace")
    }
}

/// Crate names compare with `-` and `_` alike, as cargo's registry does.
pub(crate) fn same_name(a: &str, b: &str) -> bool {
    a.replace('-', "_") == b.replace('-', "_")
}

/// `major.minor` of a version, for 0.x and 1.x alike (`0.8.9` → `(0, 8)`).
fn major_minor(version: &str) -> Option<(u64, u64)> {
    let mut parts = version.split(['.', '-', '+']);
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// The start of the versions semver counts compatible with `version`: `1.` for 1.x, `0.8.`
/// for 0.8.x.
pub(crate) fn series(version: &str) -> String {
    match major_minor(version) {
        Some((0, minor)) => format!("0.{minor}."),
        Some((major, _)) => format!("{major}."),
        None => String::new(),
    }
}

/// `(major, minor, patch)`, to find the newest of several entries.
fn triple(version: &str) -> (u64, u64, u64) {
    let mut parts = version
        .split(['-', '+'])
        .next()
        .unwrap_or("")
        .split('.')
        .map(|p| p.parse().unwrap_or(0));
    let mut next = || parts.next().unwrap_or(0);
    (next(), next(), next())
}

/// The registry entries `ab --patch` measures for `checkout`, and the line that says why:
/// `named` when `--frameworks` names them, else the entry whose crate is the checkout's and
/// whose pinned `major.minor` is the checkout's, or the newest such entry.
pub(crate) fn entries(
    checkout: &Checkout,
    named: &[String],
    registry: &'static [Entry],
) -> anyhow::Result<(Vec<&'static Entry>, String)> {
    if !named.is_empty() {
        let chosen = named
            .iter()
            .map(|n| crate::select::framework(n))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let names: Vec<&str> = chosen.iter().map(|e| e.name).collect();
        return Ok((
            chosen,
            format!("measuring {} (--frameworks)", names.join(", ")),
        ));
    }
    let candidates: Vec<&Entry> = registry
        .iter()
        .filter(|e| !e.baseline && e.in_process && same_name(e.krate, &checkout.krate))
        .collect();
    let Some(newest) = candidates
        .iter()
        .max_by_key(|e| triple(e.version()))
        .copied()
    else {
        return Err(usage(format!(
            "{} is not the crate of a framework of this build (`framebench list` names each \
             one's crate); to patch a crate a framework uses, name the framework with \
             --frameworks",
            checkout.krate
        )));
    };
    let pinned: Vec<String> = candidates
        .iter()
        .map(|e| format!("{} {}", e.name, e.version()))
        .collect();
    let same = candidates
        .iter()
        .find(|e| {
            major_minor(e.version()).is_some_and(|v| Some(v) == major_minor(&checkout.version))
        })
        .copied();
    let (entry, why) = match same {
        Some(e) => (e, "the same major.minor"),
        None => (newest, "none shares its major.minor: the newest"),
    };
    Ok((
        vec![entry],
        format!(
            "measuring {}: the checkout's {} is {}, pinned {} ({why})",
            entry.name,
            checkout.krate,
            checkout.version,
            pinned.join(", ")
        ),
    ))
}

/// A git worktree of another revision of the checkout, for `--base REV`; removed when
/// dropped, so that the user's repository is left as it was.
pub(crate) struct Worktree {
    /// The repository's top folder.
    pub(crate) top: PathBuf,
    /// Where the revision is checked out.
    pub(crate) dir: PathBuf,
    /// The revision, as `git rev-parse --short` names it.
    pub(crate) rev: String,
}

impl Worktree {
    /// Checks out `rev` of the repository holding `path` at `dir` (replacing what is there).
    pub(crate) fn add(path: &Path, rev: &str, dir: &Path) -> anyhow::Result<Worktree> {
        let top = git(path, &["rev-parse", "--show-toplevel"]).map_err(|e| {
            usage(format!(
                "--base {rev}: {} is not in a git repository ({e})",
                path.display()
            ))
        })?;
        let top = PathBuf::from(top);
        let commit = format!("{rev}^{{commit}}");
        let short = git(
            &top,
            &["rev-parse", "--short", "--verify", "--quiet", &commit],
        )
        .map_err(|_| usage(format!("--base {rev}: not a revision of {}", top.display())))?;
        if dir.exists() {
            let _ = git(
                &top,
                &["worktree", "remove", "--force", &dir.to_string_lossy()],
            );
            std::fs::remove_dir_all(dir).ok();
        }
        let _ = git(&top, &["worktree", "prune"]);
        git(
            &top,
            &[
                "worktree",
                "add",
                "--detach",
                "--force",
                &dir.to_string_lossy(),
                &short,
            ],
        )?;
        Ok(Worktree {
            top,
            dir: dir.to_owned(),
            rev: short,
        })
    }
}

impl Drop for Worktree {
    fn drop(&mut self) {
        let _ = git(
            &self.top,
            &["worktree", "remove", "--force", &self.dir.to_string_lossy()],
        );
        let _ = git(&self.top, &["worktree", "prune"]);
    }
}

/// `git rev-parse --short HEAD` of the repository holding `path`, with `+dirty` when its tree
/// differs from HEAD; `None` outside git.
pub(crate) fn revision(path: &Path) -> Option<String> {
    let head = git(path, &["rev-parse", "--short", "HEAD"]).ok()?;
    let dirty = git(path, &["status", "--porcelain", "--untracked-files=no"])
        .map(|s| !s.is_empty())
        .unwrap_or(false);
    Some(if dirty { format!("{head}+dirty") } else { head })
}

/// Runs git in `dir`; its trimmed stdout, or its last line of stderr as the error.
fn git(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| anyhow::anyhow!("running git: {e}"))?;
    if !out.status.success() {
        anyhow::bail!(
            "git {}: {}",
            args.join(" "),
            last_error(&String::from_utf8_lossy(&out.stderr))
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// cargo, as the one that started this process names it (`CARGO`), else from `PATH`.
pub(crate) fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// The line of a tool's stderr that says what went wrong: its first `error` line, else its
/// last line.
pub(crate) fn last_error(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines
        .iter()
        .find(|l| l.starts_with("error") || l.starts_with("fatal"))
        .or(lines.last())
        .map_or_else(|| "no message".to_owned(), |l| (*l).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_takes_crate_equals_path_and_refuses_anything_else() {
        let p = parse_patch("actix-web=../actix-web/actix-web").unwrap();
        assert_eq!(p.krate, "actix-web");
        assert_eq!(p.path, PathBuf::from("../actix-web/actix-web"));
        for bad in ["axum", "=../axum", "axum=", ""] {
            assert!(parse_patch(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn versions_compare_by_major_minor_and_the_newest_wins() {
        assert_eq!(major_minor("0.8.9"), Some((0, 8)));
        assert_eq!(major_minor("1.12.0-dev+abc"), Some((1, 12)));
        assert_eq!(major_minor("x"), None);
        assert_eq!(series("1.13.0-dev"), "1.");
        assert_eq!(series("0.14.32"), "0.14.");
        assert!(triple("0.8.9") > triple("0.7.10"));
        assert!(triple("1.0.0-alpha.4") > triple("0.14.32"));
    }
}
