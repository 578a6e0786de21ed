//! Records the locked versions of every crate and the compiler, so results carry them.

use std::env;
use std::fs;
use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=Cargo.lock");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=Cargo.toml");
    let lock = fs::read_to_string("Cargo.lock").unwrap_or_default();
    let mut out = String::from("/// `(crate, version)` for every package in Cargo.lock.\npub(crate) const LOCKED: &[(&str, &str)] = &[\n");
    let mut name = None;
    for line in lock.lines() {
        if let Some(v) = line.strip_prefix("name = ") {
            name = Some(v.trim_matches('"').to_owned());
        } else if let Some(v) = line.strip_prefix("version = ") {
            if let Some(n) = name.take() {
                out.push_str(&format!("    ({n:?}, {:?}),\n", v.trim_matches('"')));
            }
        }
    }
    out.push_str("];\n");
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(rustc)
        .arg("-V")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .unwrap_or_default();
    out.push_str(&format!(
        "/// `rustc -V` of the compiler that built framebench.\npub(crate) const RUSTC: &str = {:?};\n",
        version.trim()
    ));
    // framebench's own revision and features, for the environment of every results file. The
    // build script reruns after a commit (HEAD or a branch ref moves) and whenever the sources
    // change, so `-dirty` (tracked files of the build changed since the commit) is current for every build
    // of changed sources. Only paths that exist are watched: cargo reruns a script on every
    // build when a watched path is missing.
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=Cargo.toml");
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
    };
    for watched in ["HEAD", "refs/heads", "packed-refs"] {
        if let Some(path) = git(&["rev-parse", "--git-path", watched]) {
            let path = path.trim();
            if Path::new(path).exists() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
    let revision = match git(&["rev-parse", "HEAD"]) {
        Some(rev) => {
            // Dirty only where what is built or measured changed: a publication's own output
            // (docs/, README.md) or a test beside the build does not make the binary another.
            let dirty = git(&[
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                "src",
                "benches",
                "build.rs",
                "Cargo.toml",
                "Cargo.lock",
                "fixtures",
                "peers",
                ".cargo",
            ])
            .is_some_and(|s| !s.trim().is_empty());
            format!("{}{}", rev.trim(), if dirty { "-dirty" } else { "" })
        }
        None => "unknown".to_owned(),
    };
    let mut features: Vec<String> = env::vars()
        .filter_map(|(k, _)| {
            k.strip_prefix("CARGO_FEATURE_")
                .map(|f| f.to_lowercase().replace('_', "-"))
        })
        .collect();
    features.sort();
    // `framebench_partial` when a default feature is off (CI builds each framework alone):
    // the helpers that several frameworks share are then partly unused, so src/lib.rs judges
    // dead code only with the full set, as clippy checks it.
    println!("cargo::rustc-check-cfg=cfg(framebench_partial)");
    let manifest = fs::read_to_string("Cargo.toml").unwrap_or_default();
    let default: Vec<&str> = manifest
        .lines()
        .find(|l| l.starts_with("default = ["))
        .map(|l| l.split('"').skip(1).step_by(2).collect())
        .unwrap_or_default();
    if default.iter().any(|f| !features.iter().any(|g| g == f)) {
        println!("cargo::rustc-cfg=framebench_partial");
    }
    out.push_str(&format!(
        "/// framebench's `git rev-parse HEAD` at build time.\npub(crate) const GIT_REVISION: &str = {revision:?};\n/// framebench's enabled features, comma-separated.\npub(crate) const FEATURES: &str = {:?};\n",
        features.join(",")
    ));
    // An id of this build of the sources, new whenever the script reruns (any change under
    // src/, to Cargo.toml or Cargo.lock): the `framebench` and `framebench-callgrind-cell`
    // binaries compare theirs, so that a cell binary left from an older build (`cargo run`
    // builds only `framebench`) is refused instead of counting old code.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    out.push_str(&format!(
        "/// An id of the build of framebench's sources (build.rs).\npub(crate) const BUILD: &str = \"{nanos}\";\n"
    ));
    let dest = Path::new(&env::var("OUT_DIR").unwrap()).join("versions.rs");
    fs::write(dest, out).unwrap();
}
