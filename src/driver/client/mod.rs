//! The load client: a few threads, each multiplexing many keep-alive connections over
//! non-blocking sockets (mio), as wrk does. Requests are encoded once, before the threads start,
//! into a [`Ring`] (one request for a fixed scenario, [`crate::cell::RING`] distinct ones for a
//! query or body scenario), so the hot loop builds and allocates nothing per request; responses
//! are parsed only as far as status and framing, and one in `sample_every` is checked whole
//! against the oracle and its own request.
//!
//! Closed loop (default): each connection sends `pipeline` requests in one write and sends the
//! next batch when all of them are answered. Open loop (`rate`): each connection sends on a fixed
//! schedule and latency runs from the intended send time, so a stalled server is charged for
//! the requests it kept waiting (wrk2's correction for coordinated omission).
//!
//! This file holds what a run is asked to do and the threads that do it; [`conn`] holds each
//! thread's connection state, [`framing`] writes the requests and frames the responses,
//! [`event_loop`] turns the poll, and [`result`] holds what a thread measured.

mod conn;
mod event_loop;
mod framing;
mod result;
mod ring;
pub(crate) mod streams;
mod timerfd;
mod tls;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::{Duration, Instant};

use conn::Worker;
pub(crate) use result::ThreadResult;
pub(crate) use ring::Ring;

/// Checks one whole response (head and body, as received) against the oracle and the request
/// it answers, request `index` of the [`Ring`].
pub(crate) type Sampler = Arc<dyn Fn(&[u8], usize) -> anyhow::Result<()> + Send + Sync>;

/// What one load run does.
#[derive(Clone)]
pub(crate) struct ClientSpec {
    /// Server address (loopback).
    pub(crate) addr: SocketAddr,
    /// The encoded requests, and the closing one.
    pub(crate) requests: Arc<Ring>,
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
    /// Over TLS: the client's configuration (the run's certificate, resumption or not), one
    /// for the whole cell, so that its session cache is shared by every connection.
    pub(crate) tls: Option<Arc<rustls::ClientConfig>>,
    /// What the connections speak: how responses are framed, and whether each connection
    /// upgrades first.
    pub(crate) protocol: crate::options::Protocol,
    /// Under WebSocket: the upgrade request each connection sends before its first message,
    /// answered `101` before any message goes.
    pub(crate) upgrade: Option<Vec<u8>>,
}

impl ClientSpec {
    /// When a run that started at `start` begins recording: after the warm-up, or at once for
    /// a count-bounded run, which has none.
    pub(super) fn record_from(&self, start: Instant) -> Instant {
        match self.max_requests {
            Some(_) => start,
            None => start + self.warmup,
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

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
        let hello = crate::oracle::scenario("hello").unwrap().instances(1);
        let spec = ClientSpec {
            addr,
            requests: Arc::new(Ring::new(&hello, pipeline, Default::default()).unwrap()),
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
            tls: None,
            protocol: Default::default(),
            upgrade: None,
        };
        // Every response is checked whole: its body must have arrived complete.
        let sampler: Sampler = Arc::new(move |bytes: &[u8], _| {
            match crate::protocol::http1::parse_response(bytes, false) {
                Ok(Some((r, _))) if r.body().len() == body => Ok(()),
                other => Err(anyhow::anyhow!(
                    "{:?}",
                    other.map(|o| o.map(|(r, n)| (r.body().len(), n)))
                )),
            }
        });
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
        let body = 3 * conn::READ_CHUNK + 17;
        assert_all_whole(&count_bounded(fragmenting_server(body, 5), 1, body));
    }
}
