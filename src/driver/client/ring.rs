//! The requests a load run sends, encoded once before the client threads start: a ring of
//! requests of one length, in which any run of up to `pipeline` consecutive requests is one
//! contiguous slice, so a connection writes a batch with one `write` and the hot loop builds
//! nothing per request.

use crate::options::Protocol;
use crate::oracle::Instance;

/// The encoded requests of a run, and the closing request of connection churn.
#[derive(Debug)]
pub(crate) struct Ring {
    /// `count` requests of `stride` bytes each, then the first `pipeline - 1` again.
    bytes: Vec<u8>,
    stride: usize,
    count: usize,
    /// Request 0 as a connection's last (with `Connection: close`; under WebSocket followed by
    /// a Close frame): the last of each connection's requests when `requests_per_connection`
    /// is set. Its answer is checked as request 0's.
    close: Vec<u8>,
}

impl Ring {
    /// Encodes `instances` (at least one, all of one encoded length) as `protocol` sends them,
    /// for batches of up to `pipeline` requests.
    pub(crate) fn new(
        instances: &[Instance],
        pipeline: usize,
        protocol: Protocol,
    ) -> anyhow::Result<Ring> {
        anyhow::ensure!(!instances.is_empty(), "no request to send");
        let pipeline = pipeline.max(1);
        let mut bytes = Vec::new();
        let mut stride = 0;
        for instance in instances
            .iter()
            .chain(instances.iter().cycle().take(pipeline - 1))
        {
            let before = bytes.len();
            protocol.encode_request(instance, false, &mut bytes);
            let len = bytes.len() - before;
            anyhow::ensure!(
                stride == 0 || len == stride,
                "the requests differ in length ({stride} and {len} bytes)"
            );
            stride = len;
        }
        Ok(Ring {
            bytes,
            stride,
            count: instances.len(),
            close: {
                let mut close = Vec::new();
                protocol.encode_request(&instances[0], true, &mut close);
                close
            },
        })
    }

    /// How many distinct requests the ring holds.
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    /// Requests `start .. start + k` (at most the ring's pipeline depth), in one slice.
    pub(crate) fn window(&self, start: usize, k: usize) -> &[u8] {
        &self.bytes[start * self.stride..(start + k) * self.stride]
    }

    /// The bytes of `k` requests.
    pub(crate) fn len_of(&self, k: usize) -> usize {
        k * self.stride
    }

    /// The closing request.
    pub(crate) fn close(&self) -> &[u8] {
        &self.close
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::scenario;
    use crate::protocol::http1::{self, Connection};

    #[test]
    fn any_batch_is_one_slice_of_its_requests() {
        let instances = scenario("upload").unwrap().instances(5);
        let ring = Ring::new(&instances, 3, Protocol::default()).unwrap();
        assert_eq!(ring.count(), 5);
        for start in 0..5 {
            for k in 1..=3 {
                let want: Vec<u8> = (start..start + k)
                    .flat_map(|j| http1::instance_request(&instances[j % 5], Connection::KeepAlive))
                    .collect();
                assert_eq!(ring.window(start, k), &want[..], "start {start}, k {k}");
                assert_eq!(ring.len_of(k), want.len());
            }
        }
        assert!(ring
            .close()
            .starts_with(b"POST /upload HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"));
    }

    #[test]
    fn a_fixed_scenario_is_one_request() {
        let instances = scenario("hello").unwrap().instances(64);
        let ring = Ring::new(&instances, 4, Protocol::default()).unwrap();
        assert_eq!(ring.count(), 1);
        assert_eq!(
            ring.window(0, 4),
            &http1::get_request("/", Connection::KeepAlive).repeat(4)[..]
        );
    }
}
