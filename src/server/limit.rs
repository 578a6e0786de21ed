//! `framebench serve --max-requests N`: the server counts the responses it produces and exits
//! by itself after `N`, so that a binary benchmark (callgrind) can run a whole server process
//! for a fixed number of requests. Under `--protocol ws` it counts the WebSocket messages it
//! echoes instead ([`Counted::Messages`]), and the HTTP hooks count nothing: whether a
//! framework's hook counts the upgrade's `101` then does not matter.
//!
//! The limit is process-wide and set once, before the app is built. Frameworks read it once when
//! they start serving ([`active`]) and install their counting hook only when it is set; see each
//! framework's `serve` and docs/methodology/callgrind.md for what the hook costs. A framework whose server
//! counts says so with [`crate::framework::Framework::COUNTS_REQUESTS`]; the others refuse
//! `--max-requests`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

static LIMIT: OnceLock<Limit> = OnceLock::new();

/// What a [`Limit`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counted {
    /// HTTP responses ([`Limit::record`]).
    Responses,
    /// Echoed WebSocket messages ([`Limit::record_message`]).
    Messages,
}

/// A response counter with a target.
#[derive(Debug)]
pub(crate) struct Limit {
    max: u64,
    counted: Counted,
    count: AtomicU64,
    reached: Mutex<bool>,
    cond: Condvar,
}

/// Sets the process-wide limit. Fails if one is already set or `max` is 0.
pub(crate) fn install(max: u64, counted: Counted) -> anyhow::Result<&'static Limit> {
    anyhow::ensure!(max > 0, "--max-requests must be at least 1");
    let mut fresh = false;
    let limit = LIMIT.get_or_init(|| {
        fresh = true;
        Limit {
            max,
            counted,
            count: AtomicU64::new(0),
            reached: Mutex::new(false),
            cond: Condvar::new(),
        }
    });
    anyhow::ensure!(fresh, "a request limit is already installed");
    Ok(limit)
}

/// The limit, if one was installed. Read once per server start, not per request.
pub(crate) fn active() -> Option<&'static Limit> {
    LIMIT.get()
}

impl Limit {
    /// Counts one response, when the limit counts responses.
    pub(crate) fn record(&self) {
        if self.counted == Counted::Responses {
            self.add();
        }
    }

    /// Counts one echoed WebSocket message, when the limit counts messages.
    pub(crate) fn record_message(&self) {
        if self.counted == Counted::Messages {
            self.add();
        }
    }

    /// One more; the `max`-th wakes [`Limit::wait`].
    fn add(&self) {
        if self.count.fetch_add(1, Ordering::Relaxed) + 1 == self.max {
            let mut reached = self.reached.lock().unwrap_or_else(|e| e.into_inner());
            *reached = true;
            self.cond.notify_all();
        }
    }

    /// Responses counted so far.
    pub(crate) fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Blocks until `max` responses were counted (true) or `timeout` passed (false).
    pub(crate) fn wait(&self, timeout: Duration) -> bool {
        let reached = self.reached.lock().unwrap_or_else(|e| e.into_inner());
        let (reached, _) = self
            .cond
            .wait_timeout_while(reached, timeout, |r| !*r)
            .unwrap_or_else(|e| e.into_inner());
        *reached
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_to_max() {
        let l = Limit {
            max: 3,
            counted: Counted::Responses,
            count: AtomicU64::new(0),
            reached: Mutex::new(false),
            cond: Condvar::new(),
        };
        l.record();
        l.record();
        l.record_message();
        assert!(!l.wait(Duration::from_millis(10)));
        l.record();
        assert!(l.wait(Duration::from_millis(10)));
        assert_eq!(l.count(), 3);
    }

    #[test]
    fn a_message_limit_counts_messages_alone() {
        let l = Limit {
            max: 2,
            counted: Counted::Messages,
            count: AtomicU64::new(0),
            reached: Mutex::new(false),
            cond: Condvar::new(),
        };
        // The upgrade's `101`, counted by an HTTP hook, is not a message.
        l.record();
        l.record_message();
        assert_eq!(l.count(), 1);
        assert!(!l.wait(Duration::from_millis(10)));
        l.record_message();
        assert!(l.wait(Duration::from_millis(10)));
    }
}
