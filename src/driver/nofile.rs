//! The open-file limit a load needs: a descriptor per connection in this process, and as many
//! in the server child, which inherits the limit when it is started. A shell's soft limit is
//! often 1,024, so `-c 1000` would run out of descriptors; [`ensure`] raises the soft limit to
//! the hard one before the first cell, and refuses a connection count past the hard limit in one
//! line before anything runs.

use anyhow::bail;

/// Descriptors a load's process holds besides its connections: stdio, epoll and timer
/// descriptors per client thread, the server child's pipes, the fixtures, the results files.
const HEADROOM: u64 = 256;

/// Makes room for `connections` connections: raises `RLIMIT_NOFILE`'s soft limit to its hard
/// limit when the soft one is short, or fails with one line when even the hard one is.
pub(crate) fn ensure(connections: usize) -> anyhow::Result<()> {
    let need = connections as u64 + HEADROOM;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a valid `rlimit` for getrlimit to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        bail!(
            "cannot read the open-file limit: {}",
            std::io::Error::last_os_error()
        );
    }
    if limit.rlim_cur >= need {
        return Ok(());
    }
    if limit.rlim_max < need {
        bail!(
            "-c {connections} needs about {need} open files, and this shell's hard limit is {} \
             (raise it as root: `ulimit -Hn {need}`, or `nofile` in /etc/security/limits.conf)",
            limit.rlim_max
        );
    }
    let raised = libc::rlimit {
        rlim_cur: limit.rlim_max,
        rlim_max: limit.rlim_max,
    };
    // SAFETY: `raised` is a valid `rlimit`; raising the soft limit up to the hard one needs no
    // privilege.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
        bail!(
            "-c {connections} needs about {need} open files: cannot raise the soft limit from {} \
             to {}: {}",
            limit.rlim_cur,
            limit.rlim_max,
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_past_the_hard_limit_is_one_line() {
        let e = ensure(usize::MAX / 2).unwrap_err().to_string();
        assert!(e.contains("hard limit") && !e.contains('\n'), "{e}");
        ensure(10).unwrap();
    }
}
