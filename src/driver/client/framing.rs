//! Framing: writing the encoded requests to a connection, reading what it holds and consuming
//! every complete response in it, and [`frame`], which finds where a response ends.

use std::io::{self, Read, Write};
use std::time::Instant;

use anyhow::{anyhow, bail};
use mio::Poll;

use super::conn::{Worker, CARRY_MIN};
use super::{Sampler, SLICES};
use crate::protocol::Framed;

impl Worker<'_> {
    pub(super) fn write(&mut self, i: usize) {
        let c = &mut self.conns[i];
        // Every write is a suffix of the current batch of the ring, or of the closing request,
        // or of the WebSocket upgrade.
        let batch = if c.upgrading.is_some() {
            self.spec.upgrade.as_deref().unwrap_or_default()
        } else if c.sending_close {
            self.spec.requests.close()
        } else {
            self.spec.requests.window(c.batch.0, c.batch.1)
        };
        if c.tls.is_some() {
            return self.write_tls(i, batch);
        }
        let Some(stream) = c.stream.as_mut() else {
            return;
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
    pub(super) fn read(&mut self, poll: &Poll, i: usize, sampler: &Sampler, drain: bool) {
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
            let c = &mut self.conns[i];
            let tls = c.tls.is_some();
            let outcome = match (c.stream.as_mut(), c.tls.as_mut()) {
                (Some(stream), None) => stream.read(&mut buf[from..]),
                (Some(stream), Some(conn)) => {
                    crate::transport::tls::read(conn, stream, &mut buf[from..])
                }
                (None, _) => Err(io::ErrorKind::NotConnected.into()),
            };
            if tls {
                self.note_handshake(i);
                // A write the handshake held back goes on now that it may be done.
                if self.conns[i].unsent > 0 {
                    self.write(i);
                }
            }
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
                        n == offered || drain || tls
                    }
                    Err(e) => {
                        self.close(poll, i);
                        self.error(format!("{e:#}"));
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
    pub(super) fn consume(
        &mut self,
        i: usize,
        data: &[u8],
        now: Instant,
        sampler: &Sampler,
    ) -> anyhow::Result<usize> {
        let mut used = 0;
        let in_window = now <= self.end;
        // One division per read, not per response.
        let slice_ns = (self.spec.duration.as_nanos() as u64 / SLICES as u64).max(1);
        let into_ns = now.saturating_duration_since(self.record_from).as_nanos() as u64;
        let slice = ((into_ns / slice_ns) as usize).min(SLICES - 1);
        while used < data.len() {
            // Under WebSocket, the answer to the upgrade comes first: its `101` ends it.
            if self.conns[i].upgrading.is_some() {
                let Some((status, len)) = crate::protocol::http1::frame_fast(&data[used..])? else {
                    break;
                };
                if status != 101 {
                    bail!("status {status} to the WebSocket upgrade (want 101)");
                }
                used += len;
                let c = &mut self.conns[i];
                c.upgrading = None;
                c.upgraded = true;
                // Counted in the recorded window only, as the connects are.
                if in_window && now >= self.record_from {
                    self.result.upgrades += 1;
                }
                continue;
            }
            let (status, len) = match self.spec.protocol.frame_answer(&data[used..])? {
                Framed::Partial => break,
                Framed::Answer { status, len } => (status, len),
                Framed::Control { len, close } => {
                    // A pong answers nothing; a Close only ends a churning connection whose
                    // own Close went out.
                    if close && self.conns[i].awaiting_close.is_none() {
                        bail!("the server closed the WebSocket with messages to answer");
                    }
                    used += len;
                    continue;
                }
            };
            let c = &mut self.conns[i];
            let Some((intended, _sent, index)) = c.inflight.pop_front() else {
                return Err(if c.awaiting_close.is_some() {
                    anyhow!("server answered after `Connection: close` instead of closing")
                } else {
                    anyhow!("response without a request")
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
                self.result.sampled(sampler(&data[used..used + len], index));
            }
            used += len;
        }
        Ok(used)
    }
}
