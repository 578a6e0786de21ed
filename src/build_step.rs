//! One bounded build step (the Go peers' `go build`): under a bound of its own, never inside a
//! server's start-up timeout, in a process group of its own that Ctrl-C stops
//! ([`crate::interrupt`]), and leaving nothing half-written behind.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

/// The bound on a build: `default`, or `FRAMEBENCH_BUILD_TIMEOUT` in seconds.
pub(crate) fn build_timeout(default: Duration) -> Duration {
    std::env::var("FRAMEBENCH_BUILD_TIMEOUT")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(default, Duration::from_secs_f64)
}

/// Runs one build command, in a process group of its own, until `deadline`. It writes only into
/// `scratch`, a folder this function creates and always removes, whether the build succeeds,
/// fails, runs out of time or is interrupted with Ctrl-C (then the whole group is killed and the
/// process exits 130); `finish` moves the result out of it on success. The error (shown with
/// `{:#}`) is one line with the end of the build's output.
pub(crate) fn build_step(
    mut cmd: Command,
    scratch: &Path,
    deadline: Instant,
    finish: impl FnOnce(&Path) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt as _;
    struct Scratch<'a>(&'a Path);
    impl Drop for Scratch<'_> {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(self.0);
        }
    }
    let _ = std::fs::remove_dir_all(scratch);
    std::fs::create_dir_all(scratch).with_context(|| scratch.display().to_string())?;
    let _scratch = Scratch(scratch);
    let stop = crate::interrupt::interrupted();
    let log = scratch.join("build.log");
    let log_file = std::fs::File::create(&log).with_context(|| log.display().to_string())?;
    // Its own process group: Ctrl-C at the terminal reaches only us (we stop the build), and
    // killing the group also ends the compiler and linker processes `go build` started.
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(log_file.try_clone()?)
        .stderr(log_file)
        .process_group(0)
        .spawn()
        .with_context(|| format!("cannot start {:?}", cmd.get_program()))?;
    let kill_group = |child: &mut std::process::Child| {
        if let Ok(pid) = i32::try_from(child.id()) {
            // SAFETY: signalling the process group of our own child, which is not reaped yet.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
        let _ = child.wait();
    };
    let status = loop {
        if stop.load(Ordering::Relaxed) {
            // Ctrl-C: stop the build, remove what it wrote, and end the run as Ctrl-C would.
            kill_group(&mut child);
            drop(_scratch);
            eprintln!("interrupted: the build was stopped and its files removed");
            std::process::exit(130);
        }
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(e.into()),
        }
        if Instant::now() > deadline {
            kill_group(&mut child);
            bail!("did not finish in time (FRAMEBENCH_BUILD_TIMEOUT, seconds)");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    if !status.success() {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail = tail[tail.len().saturating_sub(3)..].join(" | ");
        bail!("{status}: {tail}");
    }
    Ok(finish(scratch)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_build_leaves_nothing_and_says_why() {
        let scratch = std::env::temp_dir().join(format!("fb-build-{}", std::process::id()));
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "echo partial > \"$0\"/out.partial; echo boom >&2; exit 3",
        ])
        .arg(&scratch);
        let deadline = Instant::now() + Duration::from_secs(10);
        let err = format!(
            "{:#}",
            build_step(cmd, &scratch, deadline, |_| Ok(())).unwrap_err()
        );
        assert!(err.contains("boom"), "{err}");
        assert!(!scratch.exists());
    }

    #[test]
    fn a_build_past_its_bound_is_stopped_and_cleaned() {
        let scratch = std::env::temp_dir().join(format!("fb-slow-{}", std::process::id()));
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo partial > \"$0\"/out.partial; exec sleep 30"])
            .arg(&scratch);
        let start = Instant::now();
        let deadline = start + Duration::from_millis(300);
        let err = format!(
            "{:#}",
            build_step(cmd, &scratch, deadline, |_| Ok(())).unwrap_err()
        );
        assert!(err.contains("did not finish"), "{err}");
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(!scratch.exists());
    }
}
