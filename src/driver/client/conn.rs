//! One client thread's connection state: its connections and their requests in flight, how it
//! connects, claims requests from the shared budget, queues sends, closes and times out.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Interest, Poll, Token};

use crate::driver::intervals::Intervals;

use super::result::{wall_time, ThreadResult};
use super::ClientSpec;

/// One connection of a client thread.
pub(super) struct Conn {
    pub(super) stream: Option<TcpStream>,
    /// Over TLS: the connection's rustls state, which every byte of `stream` goes through
    /// ([`super::tls`]); boxed, as it is large and most runs have none.
    pub(super) tls: Option<Box<rustls::ClientConnection>>,
    /// Over TLS: its handshake is done and counted.
    pub(super) handshaken: bool,
    /// Bytes of the current write still to send.
    pub(super) unsent: usize,
    /// (intended, sent) times of requests in flight, and the index of each in the ring.
    pub(super) inflight: VecDeque<(Instant, Instant, usize)>,
    /// The ring index of the next request this connection sends.
    pub(super) cursor: usize,
    /// The current write: requests `batch.0 .. batch.0 + batch.1` of the ring.
    pub(super) batch: (usize, usize),
    /// A response that arrived only in part, carried to the next read (`carried` bytes of
    /// `carry`). Empty almost always: most reads hold whole responses and go to the thread's
    /// scratch buffer instead (see [`Worker::read`]).
    pub(super) carry: Vec<u8>,
    pub(super) carried: usize,
    /// Open loop: next intended send time.
    pub(super) next_send: Instant,
    pub(super) retry_at: Option<Instant>,
    /// When the pending non-blocking connect started.
    pub(super) connecting: Option<Instant>,
    pub(super) responses: u64,
    pub(super) done: u64,
    /// Requests sent on the current connection (churn).
    pub(super) sent_here: u64,
    /// The unsent bytes are of the ring's closing request.
    pub(super) sending_close: bool,
    /// Churn: the last answer arrived at this time; the server must close now.
    pub(super) awaiting_close: Option<Instant>,
    /// Under WebSocket: when the upgrade request went out, until its `101` is read.
    pub(super) upgrading: Option<Instant>,
    /// Under WebSocket: the `101` was read; messages may go.
    pub(super) upgraded: bool,
}

pub(super) struct Worker<'a> {
    pub(super) spec: &'a ClientSpec,
    pub(super) conns: Vec<Conn>,
    /// One read buffer for the whole thread, as wrk has. With a buffer per connection (128 KiB
    /// each, as before) every connection's first bytes sat at the same offset of a 128 KiB
    /// stride, so at 100 or 500 connections they shared a few cache sets, and the kernel's copy
    /// into them (`_copy_to_iter`) took twice wrk's share of the client's CPU; one hot buffer
    /// avoids both the aliasing and the memory.
    pub(super) scratch: Vec<u8>,
    /// Connections answered in this batch of events, sent to after the whole batch is read.
    pub(super) answered: Vec<usize>,
    /// Some connection is closed and waits to reconnect: the loop visits every connection.
    pub(super) reconnecting: bool,
    /// Rate mode: the earliest next send of a connection that has room for it.
    pub(super) next_due: Instant,
    pub(super) interval: Option<Duration>,
    pub(super) record_from: Instant,
    pub(super) end: Instant,
    pub(super) tickets: Arc<AtomicU64>,
    pub(super) result: ThreadResult,
}

/// The scratch buffer's size.
pub(super) const READ_CHUNK: usize = 64 * 1024;
/// The least free space a read into a carried partial response is given.
pub(super) const CARRY_MIN: usize = 4 * 1024;

impl<'a> Worker<'a> {
    pub(super) fn new(
        spec: &'a ClientSpec,
        n: usize,
        first: usize,
        stride: usize,
        start: Instant,
        tickets: Arc<AtomicU64>,
    ) -> Self {
        let record_from = spec.record_from(start);
        let interval = spec
            .rate
            .map(|r| Duration::from_secs_f64(spec.connections as f64 / r.max(1e-9)));
        let conns = (0..n)
            .map(|i| {
                // Stagger the schedules so the connections do not send in lockstep.
                let index = first + i * stride;
                let offset = interval.map_or(Duration::ZERO, |iv| {
                    iv.mul_f64(index as f64 / spec.connections as f64)
                });
                Conn {
                    stream: None,
                    tls: None,
                    handshaken: false,
                    unsent: 0,
                    inflight: VecDeque::new(),
                    // Each connection starts elsewhere in the ring, so that connections send
                    // different requests at the same moment.
                    cursor: index.wrapping_mul(7919) % spec.requests.count(),
                    batch: (0, 0),
                    carry: Vec::new(),
                    carried: 0,
                    next_send: start + offset,
                    retry_at: None,
                    connecting: None,
                    responses: 0,
                    done: 0,
                    sent_here: 0,
                    sending_close: false,
                    awaiting_close: None,
                    upgrading: None,
                    upgraded: false,
                }
            })
            .collect();
        Worker {
            spec,
            conns,
            scratch: vec![0; READ_CHUNK],
            answered: Vec::new(),
            reconnecting: false,
            next_due: start,
            interval,
            record_from,
            end: record_from + spec.duration,
            tickets,
            result: ThreadResult {
                intervals: Intervals::over(spec.duration, spec.hdr_interval),
                // The same moment on the wall clock, for the interval log.
                recorded_from: Some(wall_time(record_from)),
                ..ThreadResult::empty(n)
            },
        }
    }

    pub(super) fn error(&mut self, what: String) {
        self.result.error(what);
    }

    /// Claims up to `want` requests from the shared budget.
    pub(super) fn claim(&self, want: usize) -> usize {
        match self.spec.max_requests {
            None => want,
            Some(max) => {
                let got = self.tickets.fetch_add(want as u64, Ordering::Relaxed);
                if got >= max {
                    0
                } else {
                    want.min((max - got) as usize)
                }
            }
        }
    }

    pub(super) fn budget_spent(&self) -> bool {
        self.spec
            .max_requests
            .is_some_and(|max| self.tickets.load(Ordering::Relaxed) >= max)
    }

    /// Rate mode: brings the earliest due send forward to connection `i`'s, if it can send.
    pub(super) fn note_due(&mut self, i: usize) {
        let c = &self.conns[i];
        if self.interval.is_some()
            && c.stream.is_some()
            && c.connecting.is_none()
            && c.inflight.len() < self.spec.pipeline.max(1)
        {
            self.next_due = self.next_due.min(c.next_send);
        }
    }

    /// Starts a non-blocking connect; it completes on the first writable event (see
    /// [`Worker::finish_connect`]). A full backlog never blocks the thread. A connection that
    /// cannot be started is retried shortly.
    pub(super) fn connect(&mut self, poll: &Poll, i: usize) {
        match self.open(poll, i) {
            Ok((s, tls)) => {
                let c = &mut self.conns[i];
                c.stream = Some(s);
                c.tls = tls;
                c.handshaken = false;
                c.connecting = Some(Instant::now());
                c.retry_at = None;
            }
            Err(what) => {
                self.error(what);
                self.conns[i].retry_at = Some(Instant::now() + Duration::from_millis(10));
                self.reconnecting = true;
            }
        }
    }

    /// Connection `i`'s socket, connecting and registered with `poll`, and over TLS its rustls
    /// state; or what failed.
    fn open(
        &self,
        poll: &Poll,
        i: usize,
    ) -> Result<(TcpStream, Option<Box<rustls::ClientConnection>>), String> {
        let tls = self
            .spec
            .tls
            .as_ref()
            .map(|config| {
                rustls::ClientConnection::new(
                    Arc::clone(config),
                    crate::transport::tls::server_name(),
                )
                .map(Box::new)
            })
            .transpose()
            .map_err(|e| format!("TLS client: {e}"))?;
        let mut s = TcpStream::connect(self.spec.addr)
            .and_then(|s| {
                s.set_nodelay(true)?;
                Ok(s)
            })
            .map_err(|e| format!("connect: {e}"))?;
        poll.registry()
            .register(&mut s, Token(i), Interest::READABLE | Interest::WRITABLE)
            .map_err(|e| format!("register: {e}"))?;
        Ok((s, tls))
    }

    /// On a writable event of a connecting socket: connected (true), failed, or not yet.
    pub(super) fn finish_connect(&mut self, poll: &Poll, i: usize) -> bool {
        let Some(stream) = self.conns[i].stream.as_ref() else {
            return false;
        };
        let failed = match stream.take_error() {
            Ok(Some(e)) | Err(e) => Some(e),
            Ok(None) => match stream.peer_addr() {
                Ok(_) => None,
                Err(e) if e.kind() == io::ErrorKind::NotConnected => return false,
                Err(e) => Some(e),
            },
        };
        match failed {
            None => {
                let now = Instant::now();
                if let Some(started) = self.conns[i].connecting.take() {
                    if now >= self.record_from && now <= self.end {
                        self.result.connects += 1;
                        self.result.connect_ns += now.duration_since(started).as_nanos() as u64;
                    }
                }
                true
            }
            Some(e) => {
                self.close(poll, i);
                self.conns[i].retry_at = Some(Instant::now() + Duration::from_millis(10));
                self.error(format!("connect: {e}"));
                false
            }
        }
    }

    pub(super) fn close(&mut self, poll: &Poll, i: usize) {
        let c = &mut self.conns[i];
        c.connecting = None;
        if let Some(mut s) = c.stream.take() {
            let _ = poll.registry().deregister(&mut s);
        }
        c.tls = None;
        c.inflight.clear();
        c.unsent = 0;
        c.carried = 0;
        c.sent_here = 0;
        c.sending_close = false;
        c.awaiting_close = None;
        c.upgrading = None;
        c.upgraded = false;
        self.reconnecting = true;
    }

    pub(super) fn maybe_send(&mut self, poll: &Poll, i: usize, now: Instant) {
        if self.conns[i].stream.is_none() {
            match self.conns[i].retry_at {
                Some(t) if now < t => return,
                _ => self.connect(poll, i),
            }
            if self.conns[i].stream.is_none() {
                return;
            }
        }
        let churn = self.spec.requests_per_connection;
        let depth = if churn.is_some() {
            1
        } else {
            self.spec.pipeline.max(1)
        };
        let c = &self.conns[i];
        if c.unsent > 0 || c.connecting.is_some() || c.awaiting_close.is_some() {
            return;
        }
        // Under WebSocket a connection upgrades first, and sends once the `101` is read.
        if let Some(len) = self.spec.upgrade.as_ref().map(Vec::len) {
            if !c.upgraded {
                let start = c.upgrading.is_none();
                if start {
                    let c = &mut self.conns[i];
                    c.upgrading = Some(now);
                    c.unsent = len;
                    self.write(i);
                }
                return;
            }
        }
        match self.interval {
            None => {
                if !c.inflight.is_empty() {
                    return;
                }
                let k = self.claim(depth);
                if k == 0 {
                    return;
                }
                self.queue(i, k, |_| (now, now));
                self.mark_close(i);
            }
            Some(iv) => {
                let mut k = 0;
                while c.inflight.len() + k < depth && c.next_send + iv * k as u32 <= now {
                    k += 1;
                }
                if k == 0 {
                    return;
                }
                let k = self.claim(k);
                if k == 0 {
                    return;
                }
                let first = self.conns[i].next_send;
                self.queue(i, k, |j| (first + iv * j as u32, now));
                self.conns[i].next_send = first + iv * k as u32;
                self.mark_close(i);
            }
        }
        self.write(i);
    }

    /// Queues the next `k` requests of the ring on connection `i` as one write; `times(j)` gives
    /// the (intended, sent) times of the `j`-th.
    fn queue(&mut self, i: usize, k: usize, times: impl Fn(usize) -> (Instant, Instant)) {
        let count = self.spec.requests.count();
        let c = &mut self.conns[i];
        for j in 0..k {
            let (intended, sent) = times(j);
            c.inflight
                .push_back((intended, sent, (c.cursor + j) % count));
        }
        c.batch = (c.cursor, k);
        c.cursor = (c.cursor + k) % count;
        c.unsent = self.spec.requests.len_of(k);
    }

    /// How long a server may take to close a connection after answering `Connection: close`:
    /// it closes right after its answer, so the request timeout or 0.5 s, whichever is shorter.
    pub(super) fn close_wait(&self) -> Duration {
        self.spec.timeout.min(Duration::from_millis(500))
    }

    /// Churn: counts the request just queued on connection `i` (one at a time), and makes it
    /// the closing request when it is the connection's last.
    pub(super) fn mark_close(&mut self, i: usize) {
        let Some(n) = self.spec.requests_per_connection else {
            return;
        };
        let c = &mut self.conns[i];
        c.sent_here += 1;
        if c.sent_here >= n {
            c.sending_close = true;
            c.unsent = self.spec.requests.close().len();
            // The closing request is request 0, whatever the ring's turn was.
            if let Some(last) = c.inflight.back_mut() {
                last.2 = 0;
            }
        }
    }

    pub(super) fn sweep_timeouts(&mut self, poll: &Poll, now: Instant) {
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            // A connect the server's backlog never completes counts as a socket error.
            if c.connecting
                .is_some_and(|t| now.duration_since(t) >= self.spec.timeout)
            {
                self.close(poll, i);
                self.error("connect timed out".into());
                continue;
            }
            // An upgrade the server never answers.
            if c.upgrading
                .is_some_and(|t| now.duration_since(t) >= self.spec.timeout)
            {
                self.close(poll, i);
                self.error("no answer to the WebSocket upgrade".into());
                continue;
            }
            // A correctness failure, not a measurement: counted in the warm-up too.
            if c.awaiting_close
                .is_some_and(|t| now.duration_since(t) >= self.close_wait())
            {
                self.result.ignored_close += 1;
                self.close(poll, i);
                self.error(format!(
                    "the server kept the connection open for {:.1} s after {}",
                    self.close_wait().as_secs_f64(),
                    self.spec.protocol.closing_exchange()
                ));
                continue;
            }
            if let Some(&(_, sent, _)) = c.inflight.front() {
                if now.duration_since(sent) >= self.spec.timeout {
                    // Counted when the timeout expires inside the recorded window.
                    if now >= self.record_from {
                        self.result.timeouts += c.inflight.len() as u64;
                    }
                    self.close(poll, i);
                }
            }
        }
    }
}
