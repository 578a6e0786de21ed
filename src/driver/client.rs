//! The load client: a few threads, each multiplexing many keep-alive connections over
//! non-blocking sockets (mio), as wrk does. Requests are encoded once; responses are parsed only
//! as far as status and framing, and one in `sample_every` is checked whole against the oracle.
//!
//! Closed loop (default): each connection sends `pipeline` requests in one write and sends the
//! next batch when all of them are answered. Open loop (`rate`): each connection sends on a fixed
//! schedule and latency runs from the intended send time, so a stalled server is charged for
//! the requests it kept waiting (wrk2's correction for coordinated omission).

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::intervals::{latency_histogram, Intervals};
use mio::net::TcpStream;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Registry, Token};

/// Checks one whole response (head and body, as received) against the oracle.
pub(crate) type Sampler = Arc<dyn Fn(&[u8]) -> Result<(), String> + Send + Sync>;

/// What one load run does.
#[derive(Clone)]
pub(crate) struct ClientSpec {
    /// Server address (loopback).
    pub(crate) addr: SocketAddr,
    /// One encoded request.
    pub(crate) request: Vec<u8>,
    /// The same request with `Connection: close`: the last of each connection's requests when
    /// `requests_per_connection` is set.
    pub(crate) close_request: Vec<u8>,
    /// Connection churn: each connection sends this many requests, the last with
    /// `Connection: close`, waits for the server to close it, and reconnects. `None`: keep-alive
    /// for the whole run. Sends one request at a time (the CLI refuses it with `--pipeline`).
    pub(crate) requests_per_connection: Option<u64>,
    /// Connections, spread over the threads.
    pub(crate) connections: usize,
    /// Client threads.
    pub(crate) threads: usize,
    /// Requests in flight per connection, sent in one write.
    pub(crate) pipeline: usize,
    /// Total requests per second (open loop), or `None` for closed loop.
    pub(crate) rate: Option<f64>,
    /// Not recorded.
    pub(crate) warmup: Duration,
    /// Recorded.
    pub(crate) duration: Duration,
    /// A request unanswered for this long counts as a timeout; its connection is reopened.
    pub(crate) timeout: Duration,
    /// Stop after exactly this many requests have been sent (and answered or failed).
    pub(crate) max_requests: Option<u64>,
    /// Check one response in this many per connection (and the first) against the oracle.
    pub(crate) sample_every: u64,
    /// CPUs the client threads run on (empty: no pinning).
    pub(crate) cpus: Vec<usize>,
    /// Also record the latencies in one histogram per interval of this length from the start
    /// of the recorded window, for an HdrHistogram interval log (`load --hdr-log`).
    pub(crate) hdr_interval: Option<Duration>,
}

/// What one thread measured in the recorded window.
pub(crate) struct ThreadResult {
    /// Latency in nanoseconds.
    pub(crate) hist: Histogram<u64>,
    /// Responses completed per connection, in connection order.
    pub(crate) per_conn: Vec<u64>,
    /// Response bytes received.
    pub(crate) bytes: u64,
    /// Responses whose status was not 2xx.
    pub(crate) non_2xx: u64,
    /// Connect, read and write errors, closes with requests in flight, bad framing.
    pub(crate) socket_errors: u64,
    /// Requests unanswered after the timeout.
    pub(crate) timeouts: u64,
    /// Sampled responses that differed from the oracle.
    pub(crate) mismatches: u64,
    /// Responses checked against the oracle.
    pub(crate) sampled: u64,
    /// The first difference found.
    pub(crate) first_mismatch: Option<String>,
    /// First socket error, for the report.
    pub(crate) first_error: Option<String>,
    /// Time spent in the recorded window polling without sleeping and finding nothing
    /// ([`Spin`]): CPU time the thread used while it had nothing to do, which the saturation
    /// mark must not count as the client being busy.
    pub(crate) idle_polling: Duration,
    /// Responses completed in each of [`SLICES`] equal slices of the recorded window: the
    /// rate's spread over the cell ([`super::stats::rate_spread`]).
    pub(crate) slices: Vec<u64>,
    /// Connections completed in the recorded window.
    pub(crate) connects: u64,
    /// Their connect times (from `connect` to writable), summed, in nanoseconds: kept apart
    /// from the request latencies, which start when a connected socket sends.
    pub(crate) connect_ns: u64,
    /// Connections the server kept open after answering `Connection: close` (for the request
    /// timeout or 0.5 s, whichever is shorter), warm-up included.
    pub(crate) ignored_close: u64,
    /// Responses read outside the recorded window (the warm-up's, and those of requests sent
    /// in it): the server served them too, so a server's own count of a run includes them.
    pub(crate) unrecorded: u64,
    /// With [`ClientSpec::hdr_interval`]: the recorded latencies again, one histogram per
    /// interval of the recorded window (the last holds whatever came after the window too).
    pub(crate) intervals: Intervals,
    /// The wall-clock time the recorded window started, for the interval log's timestamps.
    pub(crate) recorded_from: Option<std::time::SystemTime>,
}

impl ThreadResult {
    /// Nothing recorded yet, for `connections` connections.
    fn empty(connections: usize) -> Self {
        ThreadResult {
            hist: latency_histogram(),
            per_conn: vec![0; connections],
            bytes: 0,
            non_2xx: 0,
            socket_errors: 0,
            timeouts: 0,
            mismatches: 0,
            sampled: 0,
            first_mismatch: None,
            first_error: None,
            idle_polling: Duration::ZERO,
            slices: vec![0; SLICES],
            connects: 0,
            connect_ns: 0,
            ignored_close: 0,
            unrecorded: 0,
            intervals: Intervals::default(),
            recorded_from: None,
        }
    }

    /// Adds up the threads' results into one: the cell's counters, with every thread's
    /// connections in order and the first mismatch and error found.
    pub(crate) fn merge(results: Vec<ThreadResult>) -> Self {
        let mut m = ThreadResult::empty(0);
        for r in results {
            let _ = m.hist.add(&r.hist);
            m.per_conn.extend(r.per_conn);
            m.bytes += r.bytes;
            m.non_2xx += r.non_2xx;
            m.socket_errors += r.socket_errors;
            m.timeouts += r.timeouts;
            m.mismatches += r.mismatches;
            m.sampled += r.sampled;
            m.first_mismatch = m.first_mismatch.or(r.first_mismatch);
            m.first_error = m.first_error.or(r.first_error);
            m.idle_polling += r.idle_polling;
            m.connects += r.connects;
            m.connect_ns += r.connect_ns;
            m.ignored_close += r.ignored_close;
            m.unrecorded += r.unrecorded;
            m.recorded_from = m.recorded_from.or(r.recorded_from);
            for (sum, n) in m.slices.iter_mut().zip(&r.slices) {
                *sum += n;
            }
            m.intervals.add(r.intervals);
        }
        m
    }
}

/// The wall-clock time of `at`.
fn wall_time(at: Instant) -> std::time::SystemTime {
    let (wall, now) = (std::time::SystemTime::now(), Instant::now());
    if at >= now {
        wall + (at - now)
    } else {
        wall - (now - at)
    }
}

/// Slices of the recorded window whose rates give a cell's spread: 20 keeps a 2 s cell's
/// slices at 100 ms, long enough to hold thousands of responses each.
pub(crate) const SLICES: usize = 20;

/// Runs the load on `spec.threads` threads until the window ends, `stop` is set, or
/// `max_requests` are done. Returns one result per thread.
pub(crate) fn run(
    spec: &ClientSpec,
    sampler: Sampler,
    stop: &Arc<AtomicBool>,
) -> Vec<ThreadResult> {
    let start = Instant::now();
    let tickets = Arc::new(AtomicU64::new(0));
    let threads = spec.threads.clamp(1, spec.connections.max(1));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            // Connections t, t+threads, ... belong to thread t.
            let conns = (spec.connections + threads - 1 - t) / threads;
            let first = t;
            let spec = spec.clone();
            let sampler = Arc::clone(&sampler);
            let stop = Arc::clone(stop);
            let tickets = Arc::clone(&tickets);
            std::thread::Builder::new()
                .name(format!("client-{t}"))
                .spawn(move || {
                    crate::pinning::pin_current_thread(&spec.cpus);
                    let mut w = Worker::new(&spec, conns, first, threads, start, tickets);
                    w.run(&sampler, &stop);
                    w.result
                })
                .expect("spawn client thread")
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("client thread panicked"))
        .collect()
}

struct Conn {
    stream: Option<TcpStream>,
    /// Bytes of the current write still to send.
    unsent: usize,
    /// (intended, sent) times of requests in flight.
    inflight: VecDeque<(Instant, Instant)>,
    /// A response that arrived only in part, carried to the next read (`carried` bytes of
    /// `carry`). Empty almost always: most reads hold whole responses and go to the thread's
    /// scratch buffer instead (see [`Worker::read`]).
    carry: Vec<u8>,
    carried: usize,
    /// Open loop: next intended send time.
    next_send: Instant,
    retry_at: Option<Instant>,
    /// When the pending non-blocking connect started.
    connecting: Option<Instant>,
    responses: u64,
    done: u64,
    /// Requests sent on the current connection (churn).
    sent_here: u64,
    /// The unsent bytes are of [`ClientSpec::close_request`].
    sending_close: bool,
    /// Churn: the last answer arrived at this time; the server must close now.
    awaiting_close: Option<Instant>,
}

struct Worker<'a> {
    spec: &'a ClientSpec,
    conns: Vec<Conn>,
    batch: Vec<u8>,
    /// One read buffer for the whole thread, as wrk has. With a buffer per connection (128 KiB
    /// each, as before) every connection's first bytes sat at the same offset of a 128 KiB
    /// stride, so at 100 or 500 connections they shared a few cache sets, and the kernel's copy
    /// into them (`_copy_to_iter`) took twice wrk's share of the client's CPU; one hot buffer
    /// avoids both the aliasing and the memory.
    scratch: Vec<u8>,
    /// Connections answered in this batch of events, sent to after the whole batch is read.
    answered: Vec<usize>,
    /// Some connection is closed and waits to reconnect: the loop visits every connection.
    reconnecting: bool,
    /// Rate mode: the earliest next send of a connection that has room for it.
    next_due: Instant,
    interval: Option<Duration>,
    record_from: Instant,
    end: Instant,
    tickets: Arc<AtomicU64>,
    result: ThreadResult,
}

/// The scratch buffer's size.
const READ_CHUNK: usize = 64 * 1024;
/// The least free space a read into a carried partial response is given.
const CARRY_MIN: usize = 4 * 1024;

impl<'a> Worker<'a> {
    fn new(
        spec: &'a ClientSpec,
        n: usize,
        first: usize,
        stride: usize,
        start: Instant,
        tickets: Arc<AtomicU64>,
    ) -> Self {
        let warmup = if spec.max_requests.is_some() {
            Duration::ZERO
        } else {
            spec.warmup
        };
        let record_from = start + warmup;
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
                    unsent: 0,
                    inflight: VecDeque::new(),
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
                }
            })
            .collect();
        Worker {
            spec,
            conns,
            batch: spec.request.repeat(spec.pipeline.max(1)),
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

    fn error(&mut self, what: String) {
        self.result.socket_errors += 1;
        if self.result.first_error.is_none() {
            self.result.first_error = Some(what);
        }
    }

    /// Claims up to `want` requests from the shared budget.
    fn claim(&self, want: usize) -> usize {
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

    fn budget_spent(&self) -> bool {
        self.spec
            .max_requests
            .is_some_and(|max| self.tickets.load(Ordering::Relaxed) >= max)
    }

    fn run(&mut self, sampler: &Sampler, stop: &AtomicBool) {
        let Ok(mut poll) = Poll::new() else {
            self.error("cannot create poll".into());
            return;
        };
        let mut events = Events::with_capacity(1024);
        let mut timer = match self.interval {
            None => None,
            Some(_) => match DueTimer::new(poll.registry()) {
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

    /// Rate mode: brings the earliest due send forward to connection `i`'s, if it can send.
    fn note_due(&mut self, i: usize) {
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
    /// [`Worker::finish_connect`]). A full backlog never blocks the thread.
    fn connect(&mut self, poll: &Poll, i: usize) {
        let attempt = TcpStream::connect(self.spec.addr).and_then(|s| {
            s.set_nodelay(true)?;
            Ok(s)
        });
        match attempt {
            Ok(mut s) => {
                if let Err(e) = poll.registry().register(
                    &mut s,
                    Token(i),
                    Interest::READABLE | Interest::WRITABLE,
                ) {
                    self.error(format!("register: {e}"));
                    self.conns[i].retry_at = Some(Instant::now() + Duration::from_millis(10));
                    self.reconnecting = true;
                    return;
                }
                let c = &mut self.conns[i];
                c.stream = Some(s);
                c.connecting = Some(Instant::now());
                c.retry_at = None;
            }
            Err(e) => {
                self.error(format!("connect: {e}"));
                self.conns[i].retry_at = Some(Instant::now() + Duration::from_millis(10));
                self.reconnecting = true;
            }
        }
    }

    /// On a writable event of a connecting socket: connected (true), failed, or not yet.
    fn finish_connect(&mut self, poll: &Poll, i: usize) -> bool {
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

    fn close(&mut self, poll: &Poll, i: usize) {
        let c = &mut self.conns[i];
        c.connecting = None;
        if let Some(mut s) = c.stream.take() {
            let _ = poll.registry().deregister(&mut s);
        }
        c.inflight.clear();
        c.unsent = 0;
        c.carried = 0;
        c.sent_here = 0;
        c.sending_close = false;
        c.awaiting_close = None;
        self.reconnecting = true;
    }

    fn maybe_send(&mut self, poll: &Poll, i: usize, now: Instant) {
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
        match self.interval {
            None => {
                if !c.inflight.is_empty() {
                    return;
                }
                let k = self.claim(depth);
                if k == 0 {
                    return;
                }
                let c = &mut self.conns[i];
                for _ in 0..k {
                    c.inflight.push_back((now, now));
                }
                c.unsent = k * self.spec.request.len();
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
                let c = &mut self.conns[i];
                for _ in 0..k {
                    c.inflight.push_back((c.next_send, now));
                    c.next_send += iv;
                }
                c.unsent = k * self.spec.request.len();
                self.mark_close(i);
            }
        }
        self.write(i);
    }

    /// How long a server may take to close a connection after answering `Connection: close`:
    /// it closes right after its answer, so the request timeout or 0.5 s, whichever is shorter.
    fn close_wait(&self) -> Duration {
        self.spec.timeout.min(Duration::from_millis(500))
    }

    /// Churn: counts the request just queued on connection `i` (one at a time), and makes it
    /// the closing request when it is the connection's last.
    fn mark_close(&mut self, i: usize) {
        let Some(n) = self.spec.requests_per_connection else {
            return;
        };
        let c = &mut self.conns[i];
        c.sent_here += 1;
        if c.sent_here >= n {
            c.sending_close = true;
            c.unsent = self.spec.close_request.len();
        }
    }

    fn write(&mut self, i: usize) {
        let c = &mut self.conns[i];
        let Some(stream) = c.stream.as_mut() else {
            return;
        };
        // Every write is a suffix of the batch (the requests are identical), or of the closing
        // request.
        let batch = if c.sending_close {
            &self.spec.close_request
        } else {
            &self.batch
        };
        while c.unsent > 0 {
            let from = batch.len() - c.unsent;
            match stream.write(&batch[from..]) {
                Ok(0) => break,
                Ok(n) => c.unsent -= n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // The read side reports the close; count it there.
                    c.unsent = 0;
                    let msg = format!("write: {e}");
                    if self.result.first_error.is_none() {
                        self.result.first_error = Some(msg);
                    }
                    break;
                }
            }
        }
    }

    /// Reads what the socket holds and consumes every complete response in it.
    ///
    /// A connection that carries no partial response reads into the thread's scratch buffer.
    /// A response cut in two by the read is copied to the connection's carry buffer, and the
    /// next reads append to that (it grows by doubling) until the response is whole.
    ///
    /// It stops after a read that did not fill the space it was given, without the extra read
    /// that could only return EAGAIN (that read was half of the client's reads and more than a
    /// quarter of its syscalls: 1 send, 2 recvs and 0.4 epoll_wait per request at 100
    /// connections before, 1 send and 1 recv after). That is safe with mio's edge-triggered epoll: on TCP a short read
    /// means the receive queue was empty when recv returned it, and every segment queued after
    /// that runs sk_data_ready, which puts the socket back on epoll's ready list, so the next
    /// poll reports it. Nothing that has arrived goes unreported. After a hang-up or error
    /// event (`drain`) it reads on to EOF or the error, so the close is seen at once.
    fn read(&mut self, poll: &Poll, i: usize, sampler: &Sampler, drain: bool) {
        loop {
            let from = self.conns[i].carried;
            let mut buf = if from > 0 {
                std::mem::take(&mut self.conns[i].carry)
            } else {
                std::mem::take(&mut self.scratch)
            };
            if from > 0 && buf.len() - from < CARRY_MIN {
                let len = (buf.len() * 2).max(from + CARRY_MIN);
                buf.resize(len, 0);
            }
            let offered = buf.len() - from;
            let outcome = match self.conns[i].stream.as_mut() {
                Some(stream) => stream.read(&mut buf[from..]),
                None => Err(io::ErrorKind::NotConnected.into()),
            };
            let more = match outcome {
                Ok(0) => {
                    let lost = !self.conns[i].inflight.is_empty();
                    self.close(poll, i);
                    if lost {
                        self.error("server closed the connection with requests in flight".into());
                    }
                    false
                }
                Ok(n) => match self.consume(i, &buf[..from + n], Instant::now(), sampler) {
                    Ok(used) => {
                        let rest = from + n - used;
                        if from > 0 {
                            buf.copy_within(used..from + n, 0);
                        } else if rest > 0 {
                            let carry = &mut self.conns[i].carry;
                            if carry.len() < rest + CARRY_MIN {
                                carry.resize(rest + CARRY_MIN, 0);
                            }
                            carry[..rest].copy_from_slice(&buf[used..n]);
                        }
                        self.conns[i].carried = rest;
                        n == offered || drain
                    }
                    Err(e) => {
                        self.close(poll, i);
                        self.error(e);
                        false
                    }
                },
                Err(e) if e.kind() == io::ErrorKind::Interrupted => true,
                Err(e)
                    if e.kind() == io::ErrorKind::WouldBlock
                        || e.kind() == io::ErrorKind::NotConnected =>
                {
                    false
                }
                Err(e) => {
                    self.close(poll, i);
                    self.error(format!("read: {e}"));
                    false
                }
            };
            if from > 0 {
                self.conns[i].carry = buf;
            } else {
                self.scratch = buf;
            }
            if !more {
                return;
            }
        }
    }

    /// Consumes every complete response at the start of `data`, which arrived at `now` (one
    /// clock read per read, not per response), and returns the bytes consumed.
    fn consume(
        &mut self,
        i: usize,
        data: &[u8],
        now: Instant,
        sampler: &Sampler,
    ) -> Result<usize, String> {
        let mut used = 0;
        let in_window = now <= self.end;
        // One division per read, not per response.
        let slice_ns = (self.spec.duration.as_nanos() as u64 / SLICES as u64).max(1);
        let into_ns = now.saturating_duration_since(self.record_from).as_nanos() as u64;
        let slice = ((into_ns / slice_ns) as usize).min(SLICES - 1);
        while used < data.len() {
            let Some((status, len)) = frame(&data[used..])? else {
                break;
            };
            let c = &mut self.conns[i];
            let Some((intended, _sent)) = c.inflight.pop_front() else {
                return Err(if c.awaiting_close.is_some() {
                    "server answered after `Connection: close` instead of closing".into()
                } else {
                    "response without a request".into()
                });
            };
            if c.sending_close && c.inflight.is_empty() && c.unsent == 0 {
                c.awaiting_close = Some(now);
            }
            let sample = c.responses.is_multiple_of(self.spec.sample_every.max(1));
            c.responses += 1;
            if in_window && intended >= self.record_from {
                c.done += 1;
                self.result.bytes += len as u64;
                if !(200..300).contains(&status) {
                    self.result.non_2xx += 1;
                }
                let ns = now.duration_since(intended).as_nanos() as u64;
                self.result.hist.saturating_record(ns.max(1));
                self.result.slices[slice] += 1;
                if let Some(iv) = self.spec.hdr_interval {
                    let k = (into_ns / (iv.as_nanos() as u64).max(1)) as usize;
                    self.result.intervals.record(k, ns.max(1));
                }
            } else {
                self.result.unrecorded += 1;
            }
            if sample {
                self.result.sampled += 1;
                if let Err(e) = sampler(&data[used..used + len]) {
                    self.result.mismatches += 1;
                    if self.result.first_mismatch.is_none() {
                        self.result.first_mismatch = Some(e);
                    }
                }
            }
            used += len;
        }
        Ok(used)
    }

    fn sweep_timeouts(&mut self, poll: &Poll, now: Instant) {
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
            // A correctness failure, not a measurement: counted in the warm-up too.
            if c.awaiting_close
                .is_some_and(|t| now.duration_since(t) >= self.close_wait())
            {
                self.result.ignored_close += 1;
                self.close(poll, i);
                self.error(format!(
                    "the server kept the connection open for {:.1} s after answering \
                     `Connection: close`",
                    self.close_wait().as_secs_f64()
                ));
                continue;
            }
            if let Some(&(_, sent)) = c.inflight.front() {
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

/// The token of the rate-mode timer; connections are numbered from 0.
const TIMER: Token = Token(usize::MAX);

/// Rate mode: a timerfd in the poll, armed at the next due send.
///
/// Why not the poll's timeout: epoll_wait takes whole milliseconds (mio rounds up), so a send due
/// in 20 µs waited up to 1 ms whenever no response woke the loop first, and rate mode charges
/// that lateness to the server's latency (it counts from the intended send time). At half the
/// closed-loop rate against `raw` at 100 connections, p99 was 1.0 ms with the poll's timeout.
/// A timerfd wakes epoll with the hrtimer's precision.
struct DueTimer {
    fd: OwnedFd,
    /// The deadline it is armed for, to skip re-arming it for the same one.
    armed: Option<Instant>,
}

impl DueTimer {
    fn new(registry: &Registry) -> io::Result<DueTimer> {
        // SAFETY: timerfd_create takes no pointers; a non-negative result is a new fd we own.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is open and owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        registry.register(&mut SourceFd(&fd.as_raw_fd()), TIMER, Interest::READABLE)?;
        Ok(DueTimer { fd, armed: None })
    }

    /// Arms it to fire at `due` (at once if that has passed).
    fn arm(&mut self, now: Instant, due: Instant) {
        if self.armed == Some(due) {
            return;
        }
        // A zero it_value would disarm it: 1 ns is "now".
        let after = due
            .saturating_duration_since(now)
            .max(Duration::from_nanos(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: after.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: spec is a valid itimerspec; the old value is not asked for.
        let ok =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        self.armed = (ok == 0).then_some(due);
    }

    /// It fired: reads its count, so that the next expiry is a new edge for epoll.
    fn fired(&mut self) {
        let mut count = [0u8; 8];
        // SAFETY: reads at most 8 bytes into an 8-byte buffer.
        let _ = unsafe { libc::read(self.fd.as_raw_fd(), count.as_mut_ptr().cast(), 8) };
        self.armed = None;
    }
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

/// Status and total length of the first response in `data`, or `None` if it is incomplete.
/// Only the framing is read: Content-Length, chunked, or no body for 1xx/204/304.
pub(crate) fn frame(data: &[u8]) -> Result<Option<(u16, usize)>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut res = httparse::Response::new(&mut headers);
    let head = match res.parse(data) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(format!("malformed response head: {e}")),
    };
    let status = res.code.unwrap_or(0);
    let mut length = None;
    for h in res.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            length = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok());
            if length.is_none() {
                return Err("bad content-length".into());
            }
        } else if h.name.eq_ignore_ascii_case("transfer-encoding")
            && h.value
                .windows(7)
                .any(|w| w.eq_ignore_ascii_case(b"chunked"))
        {
            // Rare on these routes: take the full parser's slow path.
            return match crate::http1::parse_response(data, false) {
                Ok(Some((_, used))) => Ok(Some((status, used))),
                Ok(None) => Ok(None),
                Err(e) => Err(format!("{e:#}")),
            };
        }
    }
    let body = match length {
        Some(n) => n,
        None if status == 204 || status == 304 || (100..200).contains(&status) => 0,
        None => return Err("response without Content-Length or chunked framing".into()),
    };
    if data.len() < head + body {
        return Ok(None);
    }
    Ok(Some((status, head + body)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    #[test]
    fn frames_length_chunked_and_partial() {
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP";
        assert_eq!(frame(r), Ok(Some((200, 40))));
        assert_eq!(frame(&r[..39]), Ok(None));
        let c = b"HTTP/1.1 404 NF\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n";
        assert_eq!(frame(c), Ok(Some((404, c.len()))));
        assert_eq!(frame(&c[..c.len() - 2]), Ok(None));
        assert!(frame(b"HTTP/1.1 200 OK\r\n\r\nbody").is_err());
        assert!(frame(b"garbage\r\n\r\n").is_err());
    }

    /// A server on 127.0.0.1:0 that answers each request with a `body`-byte body, written in
    /// pieces with pauses between them, so the client's reads see responses cut anywhere.
    fn fragmenting_server(body: usize, pieces: usize) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for s in listener.incoming() {
                let Ok(mut s) = s else { return };
                std::thread::spawn(move || {
                    s.set_nodelay(true).unwrap();
                    let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {body}\r\n\r\n");
                    let response = [head.as_bytes(), &vec![b'x'; body]].concat();
                    let piece = response.len().div_ceil(pieces);
                    let (mut buf, mut chunk) = (Vec::new(), [0u8; 4096]);
                    loop {
                        let n = match s.read(&mut chunk) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => n,
                        };
                        buf.extend_from_slice(&chunk[..n]);
                        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            buf.drain(..end + 4);
                            for part in response.chunks(piece) {
                                if s.write_all(part).is_err() {
                                    return;
                                }
                                std::thread::sleep(Duration::from_millis(1));
                            }
                        }
                    }
                });
            }
        });
        addr
    }

    fn count_bounded(addr: SocketAddr, pipeline: usize, body: usize) -> Vec<ThreadResult> {
        let spec = ClientSpec {
            addr,
            request: crate::http1::get_request("/", crate::http1::Connection::KeepAlive),
            close_request: crate::http1::get_request("/", crate::http1::Connection::Close),
            requests_per_connection: None,
            connections: 2,
            threads: 1,
            pipeline,
            rate: None,
            warmup: Duration::ZERO,
            duration: Duration::from_secs(20),
            timeout: Duration::from_secs(5),
            max_requests: Some(12),
            sample_every: 1,
            cpus: Vec::new(),
            // Interval histograms too (`load --hdr-log`): they must hold every recorded latency.
            hdr_interval: Some(Duration::from_millis(1)),
        };
        // Every response is checked whole: its body must have arrived complete.
        let sampler: Sampler =
            Arc::new(
                move |bytes: &[u8]| match crate::http1::parse_response(bytes, false) {
                    Ok(Some((r, _))) if r.body().len() == body => Ok(()),
                    other => Err(format!(
                        "{:?}",
                        other.map(|o| o.map(|(r, n)| (r.body().len(), n)))
                    )),
                },
            );
        run(&spec, sampler, &Arc::new(AtomicBool::new(false)))
    }

    fn assert_all_whole(results: &[ThreadResult]) {
        let r = &results[0];
        assert_eq!(r.per_conn.iter().sum::<u64>(), 12);
        assert_eq!(r.socket_errors, 0, "{:?}", r.first_error);
        assert_eq!(r.timeouts, 0);
        assert_eq!((r.sampled, r.mismatches), (12, 0), "{:?}", r.first_mismatch);
        assert_eq!(r.intervals.len(), 20_000, "a 20 s bound in 1 ms intervals");
        let in_intervals: u64 = r.intervals.iter().map(|h| h.len()).sum();
        assert_eq!(in_intervals, r.hist.len());
        assert!(r.recorded_from.is_some());
    }

    #[test]
    fn responses_cut_across_reads_are_reassembled() {
        // Three pieces each: the head alone, then the body in two.
        assert_all_whole(&count_bounded(fragmenting_server(40, 3), 1, 40));
        // Pipelined: a read holds the end of one response and the start of the next.
        assert_all_whole(&count_bounded(fragmenting_server(40, 3), 3, 40));
    }

    #[test]
    fn a_count_bounded_run_ends_at_its_count() {
        // 12 requests, each answered in about 3 ms (three pieces 1 ms apart), on two
        // connections: some 20 ms of work inside a 20 s bound. It used to take 6-12 s on an idle
        // machine, and all 20 s, recording nothing, on a loaded one (issue 38). 5 s leaves a
        // loaded machine plenty.
        let addr = fragmenting_server(40, 3);
        let t = Instant::now();
        let results = count_bounded(addr, 1, 40);
        let took = t.elapsed();
        assert_all_whole(&results);
        assert!(
            took < Duration::from_secs(5),
            "12 requests took {took:?}: the run did not end at its count"
        );
    }

    #[test]
    fn a_response_larger_than_the_scratch_buffer_is_carried_whole() {
        let body = 3 * READ_CHUNK + 17;
        assert_all_whole(&count_bounded(fragmenting_server(body, 5), 1, body));
    }

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
