//! The client thread's event loop: one poll over its connections (and, in rate mode, a timer
//! armed at the next due send), reads and sends in batches, and the short spin that keeps a
//! pinned client awake between responses.

use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Registry, Token};

use super::conn::Worker;
use super::timerfd::TimerFd;
use super::Sampler;

impl Worker<'_> {
    /// Runs the connections until the window ends, `stop` is set or the request budget is
    /// spent and answered.
    ///
    /// Over 80 lines on purpose: this is the client's hot loop, turned once per poll, and it is
    /// kept in one piece so that its control flow (when it visits every connection, how long it
    /// waits, what an event does, when the batch's sends go out) reads in one place and nothing
    /// on the hot path hides behind a call. The work per connection is in [`Worker`]'s methods.
    pub(super) fn run(&mut self, sampler: &Sampler, stop: &AtomicBool) {
        let Ok(mut poll) = Poll::new() else {
            self.error("cannot create poll".into());
            return;
        };
        let mut events = Events::with_capacity(1024);
        let mut timer = match self.interval {
            None => None,
            Some(_) => match due_timer(poll.registry()) {
                Ok(t) => Some(t),
                Err(e) => {
                    self.error(format!("timerfd: {e}"));
                    return;
                }
            },
        };
        for i in 0..self.conns.len() {
            self.connect(&poll, i);
        }
        let mut last_sweep = Instant::now();
        let mut now = last_sweep;
        let mut spin = Spin::new(
            if self.interval.is_none() && !self.spec.cpus.is_empty() {
                SPIN_WINDOW
            } else {
                Duration::ZERO
            },
            now,
        );
        loop {
            if now >= self.end || stop.load(Ordering::Relaxed) {
                break;
            }
            if self.budget_spent() && self.conns.iter().all(|c| c.inflight.is_empty()) {
                break;
            }
            // A connection sends when it is answered or connected (below). The loop visits
            // every connection only while one waits to reconnect or, in rate mode, when the
            // earliest schedule is due: visiting 100 or 500 connections on every turn was a
            // tenth of the client's user time in closed loop, and most of it in rate mode.
            if self.reconnecting || (self.interval.is_some() && now >= self.next_due) {
                self.reconnecting = false;
                self.next_due = self.end;
                for i in 0..self.conns.len() {
                    self.maybe_send(&poll, i, now);
                    self.note_due(i);
                    if self.conns[i].stream.is_none() {
                        self.reconnecting = true;
                    }
                }
            }
            let mut wait = self
                .end
                .saturating_duration_since(now)
                .min(Duration::from_millis(10));
            if let Some(timer) = timer.as_mut() {
                wait = wait.min(self.next_due.saturating_duration_since(now));
                timer.arm(now, self.next_due);
            }
            let wait = spin.timeout(now, wait);
            // `now` was read before the last turn's sends: an empty poll is timed on its own,
            // or the sends would count as idle.
            let polled_at = wait.is_zero().then(Instant::now);
            if let Err(e) = poll.poll(&mut events, Some(wait)) {
                if e.kind() != io::ErrorKind::Interrupted {
                    self.error(format!("poll: {e}"));
                    break;
                }
            }
            if let Some(t) = polled_at.filter(|_| events.is_empty() && now >= self.record_from) {
                self.result.idle_polling += t.elapsed();
            }
            for ev in events.iter() {
                let i = ev.token().0;
                if ev.token() == TIMER {
                    if let Some(timer) = timer.as_mut() {
                        timer.fired();
                    }
                    continue;
                }
                if ev.is_writable() {
                    if self.conns[i].connecting.is_some() {
                        if self.finish_connect(&poll, i) {
                            self.answered.push(i);
                        }
                    } else {
                        self.write(i);
                    }
                }
                if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                    let drain = ev.is_read_closed() || ev.is_error();
                    self.read(&poll, i, sampler, drain);
                    // Closed loop: sends again once all its requests are answered. Rate mode:
                    // may send again once it is below its depth (if its schedule is due).
                    let c = &self.conns[i];
                    let room = match self.interval {
                        None => c.inflight.is_empty(),
                        Some(_) => c.inflight.len() < self.spec.pipeline.max(1),
                    };
                    if c.stream.is_some() && room {
                        self.answered.push(i);
                    }
                }
            }
            // One clock read stamps the whole batch of sends that follows.
            now = Instant::now();
            if !events.is_empty() {
                spin.saw_events(now);
            }
            // Closed loop: the next requests go out once the whole batch of events is read, as
            // wrk's do (wrk arms EPOLLOUT on each answered connection and writes on its next
            // turn; this gets the same order without its two epoll_ctl calls per request). Each
            // connection still has at most `pipeline` requests in flight, sent as soon as its
            // last one is answered and the turn's reads are done.
            let mut answered = std::mem::take(&mut self.answered);
            for &i in &answered {
                self.maybe_send(&poll, i, now);
                self.note_due(i);
            }
            answered.clear();
            self.answered = answered;
            if now.duration_since(last_sweep) >= Duration::from_millis(5) {
                last_sweep = now;
                self.sweep_timeouts(&poll, now);
            }
        }
        for (i, c) in self.conns.iter().enumerate() {
            self.result.per_conn[i] = c.done;
        }
    }
}

/// The token of the rate-mode timer; connections are numbered from 0.
const TIMER: Token = Token(usize::MAX);

/// Rate mode: a timerfd in the poll under [`TIMER`], armed at the next due send ([`TimerFd`]
/// says why not the poll's timeout).
fn due_timer(registry: &Registry) -> io::Result<TimerFd> {
    let timer = TimerFd::new()?;
    registry.register(&mut SourceFd(&timer.as_raw_fd()), TIMER, Interest::READABLE)?;
    Ok(timer)
}

/// Closed loop on a pinned client: after each event, poll without sleeping for a short while
/// ([`SPIN_WINDOW`]) before blocking in epoll_wait.
///
/// Why: on loopback the server's send runs the client socket's receive path on the *server's*
/// CPU, and if the client thread is asleep in epoll_wait that path also wakes it (a
/// try_to_wake_up and an IPI, which in a VM is an exit). Measured against actix at 10
/// connections (`perf stat -a`): a client that blocked as soon as it ran out of events slept
/// 0.2 times per request and took 0.06 wake-up IPIs per request, and 9 % of the server's CPU
/// was in `sock_def_readable` (the wake-up) against 3 % with a client that was never asleep. A
/// faster client sleeps more, so without this every saving on the client's side came back as
/// cost on the server's. wrk avoids it by being busy (0.04 sleeps per request). Polling for
/// 50 µs after the last event makes that 0.003: the server pays no wake-ups, and the load it
/// sees is unchanged (same requests, at most `pipeline` in flight per connection).
///
/// The cost is the client's own CPU, on a core it is pinned to: its CPU time per request
/// includes the polling. It is off when the client is not pinned and in rate mode (whose waits
/// are scheduled), and it backs off for 100 ms after 8 windows in a row ran out with nothing
/// to read (a slow server, or a client pinned beside the server, where polling would only
/// keep the server from running).
struct Spin {
    window: Duration,
    last_event: Instant,
    spinning: bool,
    misses: u32,
    off_until: Option<Instant>,
}

impl Spin {
    fn new(window: Duration, now: Instant) -> Spin {
        Spin {
            window,
            last_event: now,
            spinning: false,
            misses: 0,
            off_until: None,
        }
    }

    /// The timeout of the next poll: zero while polling, else `wait`.
    fn timeout(&mut self, now: Instant, wait: Duration) -> Duration {
        let on = !self.window.is_zero()
            && self.off_until.is_none_or(|t| now >= t)
            && now.duration_since(self.last_event) < self.window;
        if self.spinning && !on {
            self.misses += 1;
            if self.misses >= 8 {
                self.off_until = Some(now + Duration::from_millis(100));
                self.misses = 0;
            }
        }
        self.spinning = on;
        if on {
            Duration::ZERO
        } else {
            wait
        }
    }

    /// A poll returned events at `now`.
    fn saw_events(&mut self, now: Instant) {
        self.last_event = now;
        if self.spinning {
            self.misses = 0;
        }
    }
}

/// How long [`Spin`] polls after the last event: several times the gap between responses of a
/// saturated server here (8 µs at 120 k req/s), far below a request's round trip at 100
/// connections.
const SPIN_WINDOW: Duration = Duration::from_micros(50);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spin_polls_within_its_window_and_backs_off_when_it_finds_nothing() {
        let t0 = Instant::now();
        let us = |n| t0 + Duration::from_micros(n);
        let wait = Duration::from_millis(10);
        let mut spin = Spin::new(SPIN_WINDOW, t0);
        assert_eq!(spin.timeout(us(10), wait), Duration::ZERO);
        assert_eq!(spin.timeout(us(60), wait), wait, "the window has run out");
        spin.saw_events(us(100));
        assert_eq!(spin.timeout(us(120), wait), Duration::ZERO);
        // Windows that keep running out: after 8 it stops polling for 100 ms.
        let mut t = 1_000;
        for _ in 0..8 {
            spin.saw_events(us(t));
            assert_eq!(spin.timeout(us(t + 1), wait), Duration::ZERO);
            assert_eq!(spin.timeout(us(t + 60), wait), wait);
            t += 1_000;
        }
        spin.saw_events(us(t));
        assert_eq!(spin.timeout(us(t + 1), wait), wait, "backed off");
        spin.saw_events(us(t + 100_000));
        assert_eq!(
            spin.timeout(us(t + 100_001), wait),
            Duration::ZERO,
            "polls again"
        );
        // Off (rate mode, or not pinned): never polls.
        assert_eq!(Spin::new(Duration::ZERO, t0).timeout(t0, wait), wait);
    }
}
