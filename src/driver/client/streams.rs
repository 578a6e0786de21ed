//! The load client for `--protocol h2c`: C connections × M concurrent streams (h2load's `-c` and
//! `-m`), closed loop. It runs on tokio and the h2 crate, not on the HTTP/1.1 client's mio
//! loop, so it is a client of its own; what it measures is the same [`ThreadResult`], so the
//! cell, its marks, its CPU accounting, `--hdr-log` and `merge` read it unchanged.
//!
//! - One multi-threaded runtime of `spec.threads` workers, each pinned to the client CPUs.
//! - One task per connection. It keeps M request futures in flight (a `FuturesUnordered`, so a
//!   stream costs no task of its own) and starts the next as soon as one is answered.
//! - Latency is per stream: from the moment its request is handed to h2 to the end of its
//!   answer's body, recorded in the same HdrHistogram as HTTP/1.1 latencies.
//! - Bytes are the answers' bodies: HTTP/2 heads are HPACK-compressed and not counted.
//! - One answer in `sample_every` per connection (and the first) is checked whole against
//!   the oracle and the request it answers.
//! - Every request is bounded by the timeout, and the run by its duration (or count).
//! - The windows are [`crate::h2c::WINDOW`] and printed with every h2c result.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::stream::{FuturesUnordered, StreamExt as _};

use super::result::wall_time;
use super::{ClientSpec, ThreadResult, SLICES};
use crate::driver::intervals::Intervals;
use crate::oracle::Instance;

/// Checks one whole answer against the oracle and request `index` of the instances.
pub(crate) type Sampler =
    Arc<dyn Fn(&http::Response<Bytes>, usize) -> anyhow::Result<()> + Send + Sync>;

/// What every connection task shares.
struct Shared {
    addr: SocketAddr,
    instances: Arc<[Instance]>,
    streams: usize,
    timeout: Duration,
    sample_every: u64,
    max_requests: Option<u64>,
    tickets: AtomicU64,
    record_from: Instant,
    end: Instant,
    duration: Duration,
    hdr_interval: Option<Duration>,
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
            let mut r = ThreadResult::empty(spec.connections);
            r.socket_errors = 1;
            r.first_error = Some(format!("cannot start the h2 client's runtime: {e}"));
            return vec![r];
        }
    };
    let start = Instant::now();
    let warmup = if spec.max_requests.is_some() {
        Duration::ZERO
    } else {
        spec.warmup
    };
    let record_from = start + warmup;
    let shared = Arc::new(Shared {
        addr: spec.addr,
        instances,
        streams: streams.max(1),
        timeout: spec.timeout,
        sample_every: spec.sample_every.max(1),
        max_requests: spec.max_requests,
        tickets: AtomicU64::new(0),
        record_from,
        end: record_from + spec.duration,
        duration: spec.duration,
        hdr_interval: spec.hdr_interval,
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
                let mut r = ThreadResult::empty(1);
                r.socket_errors = 1;
                r.first_error = Some(format!("h2 connection task failed: {e}"));
                r
            }));
        }
        out
    })
}

/// How one stream ended.
struct Answer {
    /// When its request was handed to h2.
    sent: Instant,
    /// Which instance it sent.
    index: usize,
    /// The answer, or why there is none (`Err(None)`: the timeout).
    result: Result<http::Response<Bytes>, Option<String>>,
}

/// One connection: connect, then keep `streams` requests in flight until the run ends.
/// Reconnects after a failure, as the HTTP/1.1 client does, while the run lasts.
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
    while running(&shared) {
        let connect_at = Instant::now();
        let mut send =
            match tokio::time::timeout(shared.timeout, crate::h2c::connect(shared.addr)).await {
                Ok(Ok(send)) => send,
                Ok(Err(e)) => {
                    error(&mut r, format!("{e:#}"));
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
                Err(_) => {
                    error(&mut r, "h2c connect timed out".into());
                    continue;
                }
            };
        let now = Instant::now();
        if now >= shared.record_from && now <= shared.end {
            r.connects += 1;
            r.connect_ns += now.duration_since(connect_at).as_nanos() as u64;
        }
        let mut inflight = FuturesUnordered::new();
        let mut failed = false;
        loop {
            while !failed && inflight.len() < shared.streams && take_ticket(&shared) {
                let i = cursor;
                cursor = (cursor + 1) % shared.instances.len();
                inflight.push(one(&shared, &mut send, i));
            }
            let Some(answer) = inflight.next().await else {
                break;
            };
            failed |= !record(&shared, &mut r, answer, &mut answered);
        }
        if !failed {
            break;
        }
    }
    r
}

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

/// One stream: instance `index` sent and its answer read whole, within the timeout.
fn one(
    shared: &Shared,
    send: &mut h2::client::SendRequest<Bytes>,
    index: usize,
) -> impl std::future::Future<Output = Answer> + use<> {
    let mut send = send.clone();
    let (addr, timeout) = (shared.addr, shared.timeout);
    let instance = shared.instances[index].clone();
    async move {
        let sent = Instant::now();
        let result =
            match tokio::time::timeout(timeout, crate::h2c::exchange(&mut send, addr, &instance))
                .await
            {
                Ok(Ok(res)) => Ok(res),
                Ok(Err(e)) => Err(Some(format!("{e:#}"))),
                Err(_) => Err(None),
            };
        Answer {
            sent,
            index,
            result,
        }
    }
}

/// Records one stream's end in `r`; false when the connection failed (an error or a timeout),
/// so that no more streams go on it.
fn record(shared: &Shared, r: &mut ThreadResult, answer: Answer, answered: &mut u64) -> bool {
    let now = Instant::now();
    let recorded = answer.sent >= shared.record_from && now <= shared.end;
    let res = match answer.result {
        Ok(res) => res,
        Err(None) => {
            if now >= shared.record_from {
                r.timeouts += 1;
            }
            return false;
        }
        Err(Some(e)) => {
            error(r, e);
            return false;
        }
    };
    let sample = answered.is_multiple_of(shared.sample_every);
    *answered += 1;
    if recorded {
        r.per_conn[0] += 1;
        r.bytes += res.body().len() as u64;
        if !res.status().is_success() {
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
    if sample {
        r.sampled += 1;
        if let Err(e) = (shared.sampler)(&res, answer.index) {
            r.mismatches += 1;
            if r.first_mismatch.is_none() {
                r.first_mismatch = Some(format!("{e:#}"));
            }
        }
    }
    true
}

/// Counts a socket error, keeping the first.
fn error(r: &mut ThreadResult, e: String) {
    r.socket_errors += 1;
    if r.first_error.is_none() {
        r.first_error = Some(e);
    }
}
