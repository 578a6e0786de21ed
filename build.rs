//! Records the locked versions of every crate and the compiler, so results carry them.

use std::env;
use std::fs;
use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=Cargo.lock");
    println!("cargo:rerun-if-changed=build.rs");
    let lock = fs::read_to_string("Cargo.lock").unwrap_or_default();
    let mut out = String::from("/// `(crate, version)` for every package in Cargo.lock.\npub const LOCKED: &[(&str, &str)] = &[\n");
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
        "/// `rustc -V` of the compiler that built framebench.\npub const RUSTC: &str = {:?};\n",
        version.trim()
    ));
    let dest = Path::new(&env::var("OUT_DIR").unwrap()).join("versions.rs");
    fs::write(dest, out).unwrap();
}
