//! A test binary of its own, apart from tests/testsuite: it installs the counting allocator as
//! the process's `#[global_allocator]`, which counts every thread of the process, so no other
//! test may run beside it (and the server runs as a child process).
//!
//! The load driver's hot loop allocates nothing per request, with bodies too: the client run
//! for 2,000 requests allocates what it allocates for 200 (its threads, histograms and
//! connection state), within one buffer per connection for an answer cut across two reads. Its
//! requests are encoded once, into a ring, before its threads start (`driver::client::Ring`).
//! `framebench allocs` counts in-process dispatch, not the driver, hence this test.

use std::path::Path;

use framebench::child::ServerProcess;
use framebench::options::Options;
use framebench::oracle::scenario;

#[global_allocator]
static GLOBAL: framebench::allocs::Global = framebench::allocs::Global;

const CONNECTIONS: usize = 2;

#[test]
fn the_driver_allocates_nothing_per_request() {
    let bin = Path::new(env!("CARGO_BIN_EXE_framebench"));
    let server = ServerProcess::start(bin, "raw", Options::default(), &[]).unwrap();
    for name in ["hello", "query", "upload", "upload_chunked", "json_in"] {
        for pipeline in [1, 4] {
            let run = |requests: u64| {
                let s = scenario(name).unwrap();
                let (counts, answered) = framebench::driver::count_client(
                    server.addr(),
                    s,
                    requests,
                    pipeline,
                    CONNECTIONS,
                )
                .unwrap_or_else(|e| panic!("{name} pipeline {pipeline}: {e:#}"));
                assert_eq!(answered, requests, "{name} pipeline {pipeline}");
                counts.allocs
            };
            let (few, many) = (run(200), run(2_000));
            // A connection's carry buffer is allocated the first time an answer arrives cut in
            // two, which depends on how the kernel splits the stream: at most once each.
            assert!(
                many <= few + CONNECTIONS as u64,
                "{name} pipeline {pipeline}: 200 requests allocated {few} times, 2,000 {many} \
                 times: the driver allocates per request"
            );
        }
    }
}
