//! The process's Ctrl-C flag: SIGINT and SIGTERM set it instead of killing the process, so that
//! every long loop (a build, a load, a sweep, a table of rounds) stops where it stands and the
//! command still writes what it measured.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

/// The flag, installed on first use: every long loop (a build, a load) checks it.
pub(crate) fn interrupted() -> &'static Arc<AtomicBool> {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let _ = signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&flag));
        let _ = signal_hook::flag::register(signal_hook::consts::SIGTERM, Arc::clone(&flag));
        flag
    })
}
