//! The load client for `--protocol h2c`: C connections × M concurrent streams (h2load's `-c` and
//! `-m`), closed loop, or open loop under `rate`. It runs on tokio and the h2 crate, not on the HTTP/1.1 client's mio
//! loop, so it is a client of its own; what it measures is the same [`ThreadResult`], so the
//! cell, its marks, its CPU accounting, `--hdr-log` and `merge` read it unchanged.
//!
//! - One multi-threaded runtime of `spec.threads` workers, each pinned to the client CPUs.
//! - One task per connection. It sends on the connection itself and keeps the M answers'
//!   futures in a `FuturesUnordered`, so a stream costs no task of its own, and starts the next
//!   request as soon as one is answered.
//! - Latency is per stream: from the moment its request is handed to h2 to the end of its
//!   answer's body, recorded in the same HdrHistogram as HTTP/1.1 latencies.
//! - Open loop (`rate`): each connection sends on a fixed schedule of C / rate seconds, staggered
//!   across the connections, with at most M streams in flight (M plays the part `--pipeline`
//!   plays for HTTP/1.1). Latency runs from the intended send time, so requests held back by a
//!   slow server, or by M, are charged to it, as the HTTP/1.1 client does (wrk2's correction
//!   for coordinated omission).
//! - Bytes are the answers' bodies: HTTP/2 heads are HPACK-compressed and not counted.
//! - One answer in `sample_every` per connection (and the first) is checked whole against
//!   the oracle and the request it answers.
//! - Requests are built once before the load and cloned per stream; an answer's body is kept
//!   only when it is sampled.
//! - The timeout is a watchdog per connection: no stream ended for that long, and every stream
//!   in flight counts as timed out. The run is bounded by its duration (or count).
//! - The windows are [`crate::protocol::h2c::WINDOW`] and printed with every h2c result.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::stream::{FuturesUnordered, StreamExt as _};
use futures_util::FutureExt as _;

use super::result::wall_time;
use super::timerfd::TimerFd;
use super::{ClientSpec, ThreadResult, SLICES};
use crate::driver::intervals::Intervals;
use crate::oracle::Instance;

/// Checks one whole answer against the oracle and request `index` of the instances.
pub(crate) type Sampler =
    Arc<dyn Fn(&http::Response<Bytes>, usize) -> anyhow::Result<()> + Send + Sync>;

/// What every connection task shares.
struct Shared {
    peer: crate::transport::Peer,
    /// The TLS client configuration (ALPN `h2`) under `--protocol h2`; none for h2c.
    tls: Option<Arc<rustls::ClientConfig>>,
    instances: Arc<[Instance]>,
    /// Each instance's request head and body frames, built once before the load.
    requests: Vec<(http::Request<()>, Vec<Bytes>)>,
    streams: usize,
    timeout: Duration,
    sample_every: u64,
    max_requests: Option<u64>,
    tickets: AtomicU64,
    record_from: Instant,
    end: Instant,
    duration: Duration,
    hdr_interval: Option<Duration>,
    /// Open loop: the time between one connection's sends (C / rate), and when the schedules
    /// start.
    interval: Option<Duration>,
    schedule_from: Instant,
    /// The number of connections, which staggers the schedules.
    connections: usize,
    sampler: Sampler,
    stop: Arc<AtomicBool>,
}

/// Runs the load: `spec.connections` connections of `streams` concurrent streams each, on
/// `spec.threads` runtime workers, until the window ends, `stop` is set or `max_requests` are
/// done. Returns one result per connection.
pub(crate) fn run(
    spec: &ClientSpec,
    instances: Arc<[Instance]>,
    streams: usize,
    sampler: Sampler,
    stop: &Arc<AtomicBool>,
) -> Vec<ThreadResult> {
    let cpus = spec.cpus.clone();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(spec.threads.clamp(1, spec.connections.max(1)))
        .thread_name("client-h2")
        .on_thread_start(move || {
            crate::pinning::pin_current_thread(&cpus);
        })
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let why = format!("cannot start the h2 client's runtime: {e}");
            return vec![ThreadResult::failed(spec.connections, why)];
        }
    };
    let record_from = spec.record_from(Instant::now());
    let peer = crate::transport::Peer {
        addr: spec.addr,
        transport: match spec.tls {
            Some(_) => crate::options::Transport::Tls,
            None => crate::options::Transport::Tcp,
        },
    };
    let requests = match instances
        .iter()
        .map(|i| {
            Ok((
                crate::protocol::h2c::head(peer, i)?,
                crate::protocol::h2c::body_frames(i),
            ))
        })
        .collect::<anyhow::Result<Vec<_>>>()
    {
        Ok(r) => r,
        Err(e) => return vec![ThreadResult::failed(spec.connections, format!("{e:#}"))],
    };
    let shared = Arc::new(Shared {
        peer,
        tls: spec.tls.clone(),
        instances,
        requests,
        streams: streams.max(1),
        timeout: spec.timeout,
        sample_every: spec.sample_every.max(1),
        max_requests: spec.max_requests,
        tickets: AtomicU64::new(0),
        record_from,
        end: record_from + spec.duration,
        duration: spec.duration,
        hdr_interval: spec.hdr_interval,
        interval: spec
            .rate
            .map(|r| Duration::from_secs_f64(spec.connections as f64 / r.max(1e-9))),
        schedule_from: Instant::now(),
        connections: spec.connections.max(1),
        sampler,
        stop: Arc::clone(stop),
    });
    rt.block_on(async {
        let tasks: Vec<_> = (0..spec.connections)
            .map(|index| tokio::spawn(connection(Arc::clone(&shared), index)))
            .collect();
        let mut out = Vec::with_capacity(tasks.len());
        for t in tasks {
            out.push(t.await.unwrap_or_else(|e| {
                ThreadResult::failed(1, format!("h2 connection task failed: {e}"))
            }));
        }
        out
    })
}

/// How one stream ended.
struct Answer {
    /// When its request was handed to h2, or, in the open loop, when it was meant to be.
    sent: Instant,
    /// Which instance it sent.
    index: usize,
    /// The answer's status and body length, the whole answer when it is sampled, or why there
    /// is none.
    result: anyhow::Result<Got>,
}

/// An answer read to its end.
struct Got {
    status: http::StatusCode,
    body_len: usize,
    /// The whole answer, kept only when it is sampled.
    whole: Option<http::Response<Bytes>>,
}

/// One connection: connect, then keep `streams` requests in flight until the run ends.
/// Reconnects after a failure, as the HTTP/1.1 client does, while the run lasts.
///
/// Over 60 lines on purpose: the client's hot loop (send, wait, record, time out) reads in one
/// place.
async fn connection(shared: Arc<Shared>, index: usize) -> ThreadResult {
    let mut r = ThreadResult {
        intervals: Intervals::over(shared.duration, shared.hdr_interval),
        recorded_from: Some(wall_time(shared.record_from)),
        ..ThreadResult::empty(1)
    };
    // Each connection starts elsewhere in the instances, so that connections send different
    // requests at the same moment.
    let mut cursor = index.wrapping_mul(7919) % shared.instances.len().max(1);
    let mut answered = 0u64;
    // Open loop: this connection's next intended send, staggered so that the connections do not
    // send in lockstep. It carries over a reconnect: the requests a failure held back are late.
    let mut next_send = shared
        .interval
        .map(|iv| shared.schedule_from + iv.mul_f64(index as f64 / shared.connections as f64));
    let mut timer = match next_send.map(|_| Due::new()).transpose() {
        Ok(timer) => timer,
        Err(e) => {
            r.error(format!("timerfd: {e}"));
            return r;
        }
    };
    while running(&shared) {
        let connect_at = Instant::now();
        let (mut send, conn, resumed) = match tokio::time::timeout(
            shared.timeout,
            crate::protocol::h2c::handshake(shared.peer, shared.tls.as_ref()),
        )
        .await
        {
            Ok(Ok(pair)) => pair,
            Ok(Err(e)) => {
                r.error(format!("{e:#}"));
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
            Err(_) => {
                r.error("HTTP/2 connect timed out".into());
                continue;
            }
        };
        let now = Instant::now();
        if now >= shared.record_from && now <= shared.end {
            r.connects += 1;
            // Under h2 the connect's time includes the TLS handshake, counted here as the
            // HTTP/1.1 client counts its own.
            r.connect_ns += now.duration_since(connect_at).as_nanos() as u64;
            if let Some(resumed) = resumed {
                r.handshakes += 1;
                r.resumed += u64::from(resumed);
            }
        }
        let mut inflight = FuturesUnordered::new();
        let mut failed = false;
        // The timeout is a watchdog over the connection, not a timer per stream: when no stream
        // has ended for `timeout`, every stream in flight counts as timed out and the
        // connection is reopened (the HTTP/1.1 client's rule, for the oldest request).
        let mut progress = Instant::now();
        let watchdog = tokio::time::sleep(shared.timeout);
        tokio::pin!(watchdog);
        // The connection is polled in this task, after the streams: the requests queued while
        // the answers were handled go out together in its next write, as h2load's one event
        // loop sends them. A task of its own would be woken, and would write, once per batch
        // it happened to catch.
        tokio::pin!(conn);
        let mut closed = false;
        loop {
            // The clock is read here only in the open loop: the closed loop reads it once per
            // request already, when it sends and when the answer ends.
            let now = next_send.map(|_| Instant::now());
            while !failed && inflight.len() < shared.streams {
                // Open loop: only a request whose time has come.
                if let (Some(due), Some(now)) = (next_send, now) {
                    if due > now {
                        break;
                    }
                }
                // Room for a stream now, or not until one ends (a server whose
                // SETTINGS_MAX_CONCURRENT_STREAMS is below M): then the answers come first.
                match std::future::poll_fn(|cx| send.poll_ready(cx)).now_or_never() {
                    None => break,
                    Some(Err(e)) => {
                        r.error(format!("{e:#}"));
                        failed = true;
                        break;
                    }
                    Some(Ok(())) => {}
                }
                if !take_ticket(&shared) {
                    break;
                }
                let i = cursor;
                cursor = (cursor + 1) % shared.instances.len();
                let sample = answered.is_multiple_of(shared.sample_every);
                answered += 1;
                if inflight.is_empty() {
                    // The watchdog measures a wait for answers, not an idle open-loop gap.
                    progress = now.unwrap_or_else(Instant::now);
                }
                let intended = next_send;
                if let (Some(due), Some(iv)) = (&mut next_send, shared.interval) {
                    *due += iv;
                }
                match start(&mut send, &shared.requests[i], i, sample, intended) {
                    Ok(stream) => inflight.push(stream),
                    Err(e) => {
                        r.error(format!("{e:#}"));
                        failed = true;
                    }
                }
            }
            // Open loop with room for a stream: wake for the next send, within the run. At M
            // streams in flight only an answer makes room, and the requests due meanwhile are
            // late.
            let wake = match (next_send, now) {
                (Some(due), Some(now))
                    if !failed && inflight.len() < shared.streams && running(&shared) =>
                {
                    Some(due.min(shared.end).min(now + STOP_POLL))
                }
                _ => None,
            };
            if inflight.is_empty() && wake.is_none() {
                break;
            }
            let answer = tokio::select! {
                biased;
                answer = inflight.next(), if !inflight.is_empty() => match answer {
                    Some(answer) => answer,
                    None => break,
                },
                () = Due::wait(timer.as_mut(), wake.unwrap_or(shared.end)), if wake.is_some() => {
                    continue;
                }
                ended = &mut conn, if !closed => {
                    // The server closed the connection: the streams in flight end with errors,
                    // read in the next turns.
                    closed = true;
                    if let Err(e) = ended {
                        r.error(format!("connection: {e:#}"));
                    }
                    failed = true;
                    continue;
                }
                () = &mut watchdog, if !inflight.is_empty() => {
                    if progress.elapsed() < shared.timeout {
                        watchdog.as_mut().reset((progress + shared.timeout).into());
                        continue;
                    }
                    if Instant::now() >= shared.record_from {
                        r.timeouts += inflight.len() as u64;
                    }
                    failed = true;
                    break;
                }
            };
            progress = Instant::now();
            failed |= !record(&shared, &mut r, answer, progress);
        }
        if !failed {
            break;
        }
    }
    r
}

/// The open loop's wake-up: a [`TimerFd`] in tokio's reactor (it says why not tokio's timer).
struct Due(tokio::io::unix::AsyncFd<TimerFd>);

impl Due {
    fn new() -> std::io::Result<Due> {
        let timer = TimerFd::new()?;
        // SAFETY: the fd is the timerfd `timer` owns, open until `timer` drops with the
        // `AsyncFd`, and `as_raw_fd` always returns that one fd.
        let fd = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(timer, tokio::io::Interest::READABLE)
        };
        Ok(Due(fd.map_err(std::io::Error::from)?))
    }

    /// Returns at `due` (at once if it has passed). Without a timer, tokio's, to the
    /// millisecond: never the case where `wait` is called, as the open loop makes one.
    async fn wait(timer: Option<&mut Due>, due: Instant) {
        let Some(Due(fd)) = timer else {
            return tokio::time::sleep_until(due.into()).await;
        };
        fd.get_mut().arm(Instant::now(), due);
        loop {
            let Ok(mut ready) = fd.readable_mut().await else {
                return tokio::time::sleep_until(due.into()).await;
            };
            if ready.get_inner_mut().fired() {
                return;
            }
            ready.clear_ready();
        }
    }
}

/// The longest an open-loop connection sleeps before it looks at `stop` again.
const STOP_POLL: Duration = Duration::from_millis(100);

/// Whether the run goes on: not stopped, inside its window, and with requests left.
fn running(shared: &Shared) -> bool {
    !shared.stop.load(Ordering::Relaxed)
        && Instant::now() < shared.end
        && shared
            .max_requests
            .is_none_or(|max| shared.tickets.load(Ordering::Relaxed) < max)
}

/// Takes the right to send one more request, if the run goes on.
fn take_ticket(shared: &Shared) -> bool {
    if shared.stop.load(Ordering::Relaxed) || Instant::now() >= shared.end {
        return false;
    }
    match shared.max_requests {
        None => true,
        Some(max) => shared.tickets.fetch_add(1, Ordering::Relaxed) < max,
    }
}

/// Sends instance `index`'s request (head and body) on `send`, which has room for a stream,
/// and returns the future of its answer read to its end. Its latency runs from `intended` in
/// the open loop, from now otherwise.
fn start(
    send: &mut h2::client::SendRequest<Bytes>,
    (head, frames): &(http::Request<()>, Vec<Bytes>),
    index: usize,
    sample: bool,
    intended: Option<Instant>,
) -> anyhow::Result<impl std::future::Future<Output = Answer> + use<>> {
    let sent = intended.unwrap_or_else(Instant::now);
    let (response, stream) = send.send_request(head.clone(), frames.is_empty())?;
    let frames = frames.clone();
    Ok(async move {
        let result = async {
            let mut stream = stream;
            let last = frames.len().saturating_sub(1);
            for (i, frame) in frames.into_iter().enumerate() {
                crate::protocol::h2c::send_all(&mut stream, frame, i == last).await?;
            }
            read(response.await?, sample).await
        }
        .await;
        Answer {
            sent,
            index,
            result,
        }
    })
}

/// Reads an answer to its end, giving its window back as it comes; keeps it whole only when
/// it is sampled.
async fn read(res: http::Response<h2::RecvStream>, sample: bool) -> anyhow::Result<Got> {
    let (parts, mut body) = res.into_parts();
    let mut whole = sample.then(bytes::BytesMut::new);
    let mut body_len = 0;
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
        body_len += chunk.len();
        if let Some(w) = &mut whole {
            w.extend_from_slice(&chunk);
        }
    }
    let status = parts.status;
    Ok(Got {
        status,
        body_len,
        whole: whole.map(|w| http::Response::from_parts(parts, w.freeze())),
    })
}

/// Records one stream's end, at `now`, in `r`; false when the stream failed, so that no more
/// streams go on its connection.
fn record(shared: &Shared, r: &mut ThreadResult, answer: Answer, now: Instant) -> bool {
    let got = match answer.result {
        Ok(got) => got,
        Err(e) => {
            r.error(format!("{e:#}"));
            return false;
        }
    };
    if answer.sent >= shared.record_from && now <= shared.end {
        r.per_conn[0] += 1;
        r.bytes += got.body_len as u64;
        if !got.status.is_success() {
            r.non_2xx += 1;
        }
        let ns = (now.duration_since(answer.sent).as_nanos() as u64).max(1);
        r.hist.saturating_record(ns);
        let into_ns = now.saturating_duration_since(shared.record_from).as_nanos() as u64;
        let slice_ns = (shared.duration.as_nanos() as u64 / SLICES as u64).max(1);
        r.slices[((into_ns / slice_ns) as usize).min(SLICES - 1)] += 1;
        if let Some(iv) = shared.hdr_interval {
            r.intervals
                .record((into_ns / (iv.as_nanos() as u64).max(1)) as usize, ns);
        }
    } else {
        r.unrecorded += 1;
    }
    if let Some(whole) = &got.whole {
        r.sampled((shared.sampler)(whole, answer.index));
    }
    true
}
