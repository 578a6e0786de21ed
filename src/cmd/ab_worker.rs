//! `framebench ab-worker` (hidden): one build's side of `framebench ab`, driven line by line on
//! stdin.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use crate::ab::prepare;

/// `framebench ab-worker`: answers the parent's lines on stdin, one line each, until `quit`
/// or end of input. `hello` → `framebench-ab/1`; `prepare FW SCENARIO` → `ok` or `error …`
/// (builds the cell, checked against the oracle); `time N` → ns per request of N dispatches
/// ([`crate::bench::timed_batch`]).
pub fn run() -> anyhow::Result<ExitCode> {
    if let Some(cpu) = std::env::var("FRAMEBENCH_AB_CPU")
        .ok()
        .and_then(|c| c.parse::<usize>().ok())
    {
        crate::pinning::pin_current_thread(&[cpu]);
    }
    let fixtures = crate::fixtures::Fixtures::load_default()?;
    let config = crate::framework::Config::new(fixtures, None);
    let mut prepared: Option<crate::cell::Prepared> = None;
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let words: Vec<&str> = line.split_whitespace().collect();
        let reply = match words[..] {
            ["hello"] => "framebench-ab/1".to_owned(),
            ["quit"] => break,
            ["prepare", fw, scenario] => {
                prepared = None;
                match prepare(&config, fw, scenario) {
                    Ok(p) => {
                        prepared = Some(p);
                        "ok".to_owned()
                    }
                    Err(e) => format!("error {e:#}"),
                }
            }
            ["time", n] => match (&prepared, n.parse::<usize>()) {
                (Some(p), Ok(n)) if n > 0 => {
                    match crate::bench::timed_batch(&*p.app, &p.instances, n) {
                        Ok(t) => format!("{:.3}", t.as_secs_f64() * 1e9 / n as f64),
                        Err(e) => format!("error {e:#}"),
                    }
                }
                _ => "error no cell prepared, or a bad count".to_owned(),
            },
            _ => format!("error unknown request '{line}'"),
        };
        if writeln!(out, "{reply}").and_then(|()| out.flush()).is_err() {
            break;
        }
    }
    Ok(ExitCode::SUCCESS)
}
