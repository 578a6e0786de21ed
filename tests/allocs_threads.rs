//! A test binary of its own, apart from tests/testsuite: it installs the counting allocator as
//! the process's `#[global_allocator]`, whose counters are process-global, so no other test may
//! run beside it.
//!
//! The counting allocator counts what other threads allocate while a region is open, and
//! nothing outside a region.

#[global_allocator]
static GLOBAL: framebench::allocs::Global = framebench::allocs::Global;

#[test]
fn a_region_counts_allocations_on_other_threads() {
    assert!(framebench::allocs::installed());
    let (kept, counts) = framebench::allocs::count(|| {
        std::thread::scope(|s| {
            s.spawn(|| std::hint::black_box(vec![0u8; 1000]).len())
                .join()
                .unwrap()
        })
    });
    assert_eq!(kept, 1000);
    // The vector, at least; the thread's own start allocates too.
    assert!(counts.allocs >= 1, "{counts}");
    assert!(counts.bytes_allocated >= 1000, "{counts}");
    // Switched off again: nothing is counted outside a region.
    let before = framebench::allocs::GATE.stats().stats();
    drop(std::hint::black_box(vec![0u8; 1000]));
    assert_eq!(framebench::allocs::GATE.stats().stats(), before);
}
