//! `ab --patch CRATE=PATH`: from the author's checkout to two built binaries and what they
//! measure. [`prepare`] reads the checkout and picks the framework, [`Plan::build`] makes the
//! two builds ([`super::build`]), [`Builds::measure`] takes every figure of every cell
//! ([`super::measure`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::build::{self, Side};
use super::checkout::{self, Checkout, Patch, Worktree};
use super::measure::{self, Build, Load};
use crate::bench::callgrind_out::Profile;
use crate::framework::Entry;
use crate::oracle::Scenario;
use crate::results::diff::Change;
use crate::tools::Tool;

/// What the two builds are and where they are made.
pub(crate) struct Plan {
    /// The checkout (the new side).
    pub(crate) checkout: Checkout,
    /// `--patch` as given.
    pub(crate) patch: Patch,
    /// `--base REV`, or the pinned release.
    pub(crate) base_rev: Option<String>,
    /// The frameworks measured.
    pub(crate) entries: Vec<&'static Entry>,
    /// The version of the crate framebench pins (the base without `--base`).
    pub(crate) pinned: String,
    /// The scratch folder.
    pub(crate) scratch: PathBuf,
    /// What was chosen and why, one line each, for the output.
    pub(crate) lines: Vec<String>,
}

/// Reads the checkout and picks the frameworks: every mistake in the command line is one line
/// of bad input here, before anything is built.
pub(crate) fn prepare(
    patch: &Patch,
    base_rev: Option<&str>,
    frameworks: &[String],
    scratch: Option<&Path>,
) -> anyhow::Result<Plan> {
    let checkout = Checkout::read(patch)?;
    let (entries, line) = checkout::entries(&checkout, frameworks, crate::frameworks::REGISTRY)?;
    let pinned = entries
        .iter()
        .find(|e| checkout::same_name(e.krate, &checkout.krate))
        .map(|e| e.version().to_owned())
        // A crate the frameworks use (`--frameworks`): its locked version of the checkout's
        // series (hyper 1.x, not the 0.10 or 0.14 framebench also locks), else the first.
        .or_else(|| {
            let series = checkout::series(&checkout.version);
            crate::env::crate_version(&checkout.krate, &series)
                .or_else(|| crate::env::crate_version(&checkout.krate, ""))
                .map(str::to_owned)
        })
        .ok_or_else(|| {
            crate::error::usage(format!(
                "{} is not in framebench's Cargo.lock: no framework of this build uses it",
                checkout.krate
            ))
        })?;
    let scratch = match scratch {
        Some(dir) => dir.to_owned(),
        None => crate::env::target_dir().join("ab-patch"),
    };
    let scratch = std::path::absolute(&scratch)?;
    Ok(Plan {
        checkout,
        patch: patch.clone(),
        base_rev: base_rev.map(str::to_owned),
        entries,
        pinned,
        scratch,
        lines: vec![line],
    })
}

/// The two builds, made.
pub(crate) struct Builds {
    /// The base side's scratch folder and what its manifest changed.
    pub(crate) base: Side,
    /// The new side's.
    pub(crate) new: Side,
    /// The base's `framebench`.
    pub(crate) base_exe: PathBuf,
    /// The new's.
    pub(crate) new_exe: PathBuf,
    /// What each side is, for the output: `axum 0.8.9 from crates.io`, `axum 0.8.99 at PATH
    /// (git 1a2b3c4+dirty)`.
    pub(crate) base_label: String,
    /// See `base_label`.
    pub(crate) new_label: String,
    /// How long each build took.
    pub(crate) took: (Duration, Duration),
    /// Packages of the new lock not in the base's, other than the checkout's.
    pub(crate) moved: Vec<String>,
}

impl Plan {
    /// `CRATE=PATH`, and ` --base REV` when given: the command's own words for a title.
    pub(crate) fn patch_arg(&self) -> String {
        format!(
            "{}={}{}",
            self.patch.krate,
            self.patch.path.display(),
            self.base_rev
                .as_ref()
                .map_or_else(String::new, |r| format!(" --base {r}"))
        )
    }

    /// The cargo features of the frameworks measured.
    pub(crate) fn features(&self) -> Vec<&'static str> {
        let mut f: Vec<&str> = self
            .entries
            .iter()
            .map(|e| e.feature)
            .filter(|f| !f.is_empty())
            .collect();
        f.sort_unstable();
        f.dedup();
        f
    }

    /// Makes both builds in the shared target folder, base first, printing a line as each one
    /// starts and ends.
    pub(crate) fn build(&self) -> anyhow::Result<Builds> {
        let source = build::source()?;
        let target = self.scratch.join("target");
        let features = self.features();
        let new_label = format!(
            "{} {} at {}{}",
            self.checkout.krate,
            self.checkout.version,
            self.patch.path.display(),
            checkout::revision(&self.patch.path)
                .map_or_else(String::new, |r| format!(" (git {r})"))
        );
        // With --base, the base is the same checkout at REV, in a worktree removed when done.
        let (base, base_label, worktree) = match &self.base_rev {
            Some(rev) => {
                let wt = Worktree::add(&self.patch.path, rev, &self.scratch.join("rev"))?;
                let at = wt.dir.join(
                    self.patch
                        .path
                        .canonicalize()?
                        .strip_prefix(&wt.top)
                        .unwrap_or(Path::new("")),
                );
                let co = Checkout::read(&Patch {
                    krate: self.checkout.krate.clone(),
                    path: at,
                })?;
                // A folder of its own: the release's base stays built for the next run.
                let side = Side::prepare(
                    ("base", "base-rev"),
                    &self.scratch,
                    &source,
                    Some(&co),
                    &self.pinned,
                )?;
                let label = format!("{} {} at {rev} (git {})", co.krate, co.version, wt.rev);
                (side, label, Some(wt))
            }
            None => (
                Side::prepare(("base", "base"), &self.scratch, &source, None, &self.pinned)?,
                format!(
                    "{} {} from crates.io (framebench's pin)",
                    self.checkout.krate, self.pinned
                ),
                None,
            ),
        };
        let new = Side::prepare(
            ("new", "new"),
            &self.scratch,
            &source,
            Some(&self.checkout),
            &self.pinned,
        )?;
        let what = if features.is_empty() {
            "no framework feature".to_owned()
        } else {
            format!("--features {}", features.join(","))
        };
        println!("building base: {base_label}, {what} …");
        let b = base.build(&target, &features, worktree.is_none())?;
        println!("built base in {:.0} s", b.took.as_secs_f64());
        drop(worktree);
        println!("building new: {new_label} …");
        let n = new.build(&target, &features, false)?;
        println!(
            "built new in {:.0} s (the target folder both share: {})",
            n.took.as_secs_f64(),
            target.display()
        );
        let moved = new.moved_against(&base, &self.checkout.members);
        Ok(Builds {
            base_exe: b.exe,
            new_exe: n.exe,
            base,
            new,
            base_label,
            new_label,
            took: (b.took, n.took),
            moved,
        })
    }
}

/// How long and how often each cell is measured.
pub(crate) struct Settings {
    /// Fresh pairs of in-process workers per cell.
    pub(crate) restarts: usize,
    /// Paired rounds per pair of workers.
    pub(crate) rounds: usize,
    /// The loopback rate's rounds and load.
    pub(crate) load: Load,
}

/// Everything measured.
#[derive(Default)]
pub(crate) struct Measured {
    /// One change per cell and metric, in the order taken.
    pub(crate) changes: Vec<Change>,
    /// Per cell whose instruction count changed: where, by function.
    pub(crate) functions: Vec<(String, Vec<(String, f64)>)>,
    /// What was not measured, and why, one line each.
    pub(crate) missing: Vec<String>,
}

impl Builds {
    /// `fw` × `scenario` counted under callgrind in both builds: base, then new, each figure
    /// with its profile (`profile --callgrind --patch`).
    pub(crate) fn instructions(
        &self,
        fw: &str,
        scenario: &str,
    ) -> anyhow::Result<[(crate::results::Figure, Profile); 2]> {
        let (base, new) = self.sides();
        Ok([
            measure::instructions(base, fw, scenario)?,
            measure::instructions(new, fw, scenario)?,
        ])
    }

    /// Each side's binary and folder.
    fn sides(&self) -> (Build<'_>, Build<'_>) {
        (
            Build {
                exe: &self.base_exe,
                dir: &self.base.dir,
            },
            Build {
                exe: &self.new_exe,
                dir: &self.new.dir,
            },
        )
    }

    /// Every figure of `scenarios` for every framework: counts, instructions (with valgrind),
    /// in-process time, loopback rate. A figure that cannot be taken is a line in `missing`,
    /// not the end of the run.
    pub(crate) fn measure(
        &self,
        entries: &[&'static Entry],
        scenarios: &[&'static Scenario],
        settings: &Settings,
    ) -> Measured {
        let mut m = Measured::default();
        let (base, new) = self.sides();
        let valgrind = Tool::Valgrind.path();
        if let Err(why) = valgrind {
            m.missing.push(format!("instructions: {why}"));
        }
        let valgrind = valgrind.is_ok();
        let pinning = crate::pinning::Pinning::one_core_each();
        let cpus = pinning.server_cpus.clone();
        for entry in entries {
            let fw = entry.name;
            let served: Vec<&str> = scenarios
                .iter()
                .filter(|s| crate::cell::supported(entry, s, true).is_ok())
                .map(|s| s.name)
                .collect();
            for s in scenarios.iter().filter(|s| !served.contains(&s.name)) {
                m.missing
                    .push(format!("{fw} {}: it does not serve it in-process", s.name));
            }
            match (
                measure::counts(base, fw, &served),
                measure::counts(new, fw, &served),
            ) {
                (Ok(b), Ok(n)) => {
                    for f in &b {
                        match n
                            .iter()
                            .find(|g| (&g.scenario, g.metric) == (&f.scenario, f.metric))
                        {
                            Some(g) => m.changes.push(measure::exact(f, g)),
                            None => m.missing.push(format!("{}: only in base", f.name())),
                        }
                    }
                }
                (Err(e), _) | (_, Err(e)) => m.missing.push(format!("{fw} allocs: {e:#}")),
            }
            for scenario in &served {
                if valgrind {
                    match (
                        measure::instructions(base, fw, scenario),
                        measure::instructions(new, fw, scenario),
                    ) {
                        (Ok((bf, bp)), Ok((nf, np))) => {
                            let change = measure::exact(&bf, &nf);
                            if change.separated {
                                m.functions.push((
                                    format!("{fw} {scenario}"),
                                    measure::functions(&bp, &np, 8),
                                ));
                            }
                            m.changes.push(change);
                        }
                        (Err(e), _) | (_, Err(e)) => {
                            m.missing
                                .push(format!("{fw} {scenario} instructions: {e:#}"));
                        }
                    }
                }
                let exes = (&self.base_exe, &self.new_exe, cpus.as_slice());
                match measure::time(exes, fw, scenario, (settings.restarts, settings.rounds)) {
                    Ok(c) => m.changes.push(c),
                    Err(e) => m.missing.push(format!("{fw} {scenario} time: {e:#}")),
                }
                if settings.load.rounds == 0 {
                    continue;
                }
                if !entry.loopback {
                    m.missing.push(format!(
                        "{fw} {scenario} rate: it does not serve on a socket"
                    ));
                    continue;
                }
                match measure::loopback((base, new), fw, scenario, &settings.load) {
                    Ok(c) => m.changes.push(c),
                    Err(e) => m.missing.push(format!("{fw} {scenario} rate: {e:#}")),
                }
            }
        }
        if settings.load.rounds == 0 {
            m.missing.push("rate: --loopback-rounds 0".to_owned());
        }
        m
    }
}
