//! A test binary of its own, apart from tests/testsuite: it counts the process's threads
//! (`/proc/self/task`), so no other test's threads may change the count.
//!
//! `ServerHandle::shutdown` stops the server and joins every thread it started, even with
//! keep-alive connections still open.

use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use framebench::check::bind_local;
use framebench::fixtures::Fixtures;
use framebench::framework::Config;
use framebench::frameworks::REGISTRY;
use framebench::options::Options;
use framebench::protocol::http1::raw_get;

/// The name of the thread the `ctrlc` crate starts, once per process, the first time a handler
/// is set: ohkami sets one when it starts serving (docs/methodology/fairness.md). It waits on a pipe for
/// the rest of the process; it belongs to no server, so it is not counted (and there must never
/// be more than one).
const CTRLC_THREAD: &str = "ctrl-c";

/// This process's threads, but for `ctrlc`'s.
fn threads() -> usize {
    let names: Vec<String> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|name| name.trim_end().to_owned())
        .collect();
    let ctrlc = names.iter().filter(|n| *n == CTRLC_THREAD).count();
    assert!(
        ctrlc <= 1,
        "{ctrlc} `{CTRLC_THREAD}` threads: one per server, not per process"
    );
    names.len() - ctrlc
}

/// The thread count settles back to `want` within a second (an exiting thread may still be
/// listed for a few microseconds after it was joined by a channel rather than a handle).
fn settles_to(want: usize) -> Result<(), usize> {
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let now = threads();
        if now == want {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(now);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn shutdown_leaves_no_thread_behind() {
    let fixtures: Arc<Fixtures> = Fixtures::load_default().unwrap();
    for entry in REGISTRY
        .iter()
        .filter(|e| e.loopback && e.available().is_ok())
    {
        let options = Options {
            threads: 3,
            ..Options::default()
        };
        let app = entry
            .build(&Config::new(Arc::clone(&fixtures), None).with(options))
            .unwrap();
        let before = threads();
        let server = app.serve(bind_local().unwrap()).unwrap();
        let addr = server.addr();
        assert_eq!(raw_get(addr, "/").unwrap().status, 200);
        // An idle keep-alive connection, and one that sent half a request.
        let mut idle = TcpStream::connect(addr).unwrap();
        idle.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .unwrap();
        let mut half = TcpStream::connect(addr).unwrap();
        half.write_all(b"GET / HTTP/1.1\r\nHo").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            threads() > before,
            "{}: serving started no thread",
            entry.name
        );
        let start = Instant::now();
        server.shutdown().unwrap();
        assert!(
            start.elapsed() < Duration::from_secs(4),
            "{}: shutdown took {:?}",
            entry.name,
            start.elapsed()
        );
        if let Err(now) = settles_to(before) {
            panic!(
                "{}: {before} threads before serving, {now} after shutdown",
                entry.name
            );
        }
        drop((idle, half));
    }
}
