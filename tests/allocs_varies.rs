//! A test binary of its own, apart from tests/testsuite: it installs the counting allocator as
//! the process's `#[global_allocator]`, whose counters are process-global, so no other test may
//! run beside it.
//!
//! A cell whose repeats allocate differently is reported as failed, with every count seen,
//! never averaged; the same harness counts a steady one.

use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};

use framebench::fixtures::Fixtures;
use framebench::framework::{Config, Entry, Framework, Request, Response, ServerHandle};
use framebench::frameworks::Null;
use framebench::options::Logging;

#[global_allocator]
static GLOBAL: framebench::allocs::Global = framebench::allocs::Global;

/// `null`, allocating one box more on every request.
struct Drifting {
    inner: Null,
    calls: AtomicUsize,
}

impl Framework for Drifting {
    const NAME: &'static str = "drifting";
    const CRATE: &'static str = "framebench";
    const VERSION_PREFIX: &'static str = "";
    const ABOUT: framebench::framework::About = Null::ABOUT;
    const CANNOT: &'static [(&'static str, &'static str)] = &[];

    fn build(config: &Config) -> anyhow::Result<Self> {
        Ok(Drifting {
            inner: Null::build(config)?,
            calls: AtomicUsize::new(0),
        })
    }

    fn dispatch(&self, req: Request) -> anyhow::Result<Response> {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        for i in 0..n {
            drop(std::hint::black_box(Box::new(i)));
        }
        self.inner.dispatch(req)
    }

    fn serve(&self, listener: TcpListener) -> anyhow::Result<ServerHandle> {
        self.inner.serve(listener)
    }
}

#[test]
fn repeats_that_disagree_fail_the_cell() {
    let base = Config::new(Fixtures::load_default().unwrap(), None);
    let hello = framebench::oracle::scenario("hello").unwrap();
    let drifting = Entry::of::<Drifting>("drifting");
    let cell = framebench::allocs::measure(&drifting, &base, hello, Logging::Off, 5);
    assert_eq!(cell.counts, None);
    let why = cell.error.unwrap();
    assert!(why.contains("5 repeats disagree"), "{why}");
    // One box more each time: five distinct counts, each seen once.
    assert!(why.matches("×1").count() >= 5, "{why}");

    let null = framebench::frameworks::floor().unwrap();
    let steady = framebench::allocs::measure(null, &base, hello, Logging::Off, 5);
    assert!(steady.error.is_none(), "{steady:?}");
    assert!(steady.counts.unwrap().allocs > 0);
}
