//! The global allocator of the `framebench` binary: the system allocator behind a switch.
//!
//! Switched off (always, except inside [`super::count`] and [`super::sites`]) every call goes
//! straight to [`System`], after one relaxed load of the switch: the timed paths of the quick
//! compare and `framebench profile` pay that load and a predicted branch per call, nothing
//! else (docs/methodology/in-process.md, "Allocations per request", gives the measured difference).
//! Switched on, the calls go through stats_alloc's [`StatsAlloc`], which counts them in
//! process-global atomics, so allocations made on any thread (tokio's, rocket's) are counted.
//!
//! Why a switch of our own around stats_alloc instead of `StatsAlloc` alone: `StatsAlloc`
//! counts every call with four sequentially consistent atomic additions, always; the binary
//! that times requests must not pay that. And stats_alloc cannot say where an allocation was
//! made: in [`Mode::Sites`] this gate also records a backtrace per call ([`super::sites`]).

use std::alloc::{GlobalAlloc, Layout, System};
use std::backtrace::Backtrace;
use std::cell::Cell;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

use stats_alloc::StatsAlloc;

/// What the gate does with a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Mode {
    /// Straight to the system allocator.
    Off = 0,
    /// Counted by stats_alloc.
    Count = 1,
    /// Counted, and a backtrace recorded for each allocation and reallocation.
    Sites = 2,
}

/// One recorded allocation or reallocation (in [`Mode::Sites`]).
pub(crate) struct Recorded {
    /// `true` for a reallocation.
    pub(crate) realloc: bool,
    /// The new size in bytes.
    pub(crate) size: usize,
    /// Where it was made, unresolved until printed.
    pub(crate) backtrace: Backtrace,
}

/// The system allocator behind a switch; see the module doc.
pub struct Gate {
    mode: AtomicU8,
    stats: StatsAlloc<System>,
    recorded: Mutex<Vec<Recorded>>,
}

thread_local! {
    /// Set while this thread records a backtrace: the allocations that recording makes go
    /// straight to the system allocator, neither counted nor recorded (no recursion).
    static RECORDING: Cell<bool> = const { Cell::new(false) };
}

impl Gate {
    /// A gate, switched off.
    pub(crate) const fn new() -> Gate {
        Gate {
            mode: AtomicU8::new(Mode::Off as u8),
            stats: StatsAlloc::system(),
            recorded: Mutex::new(Vec::new()),
        }
    }

    /// The counters (stats_alloc's), for a [`stats_alloc::Region`].
    pub fn stats(&self) -> &StatsAlloc<System> {
        &self.stats
    }

    /// Switches the gate.
    pub(crate) fn set(&self, mode: Mode) {
        self.mode.store(mode as u8, Ordering::SeqCst);
    }

    /// Takes what was recorded in [`Mode::Sites`].
    pub(crate) fn take_recorded(&self) -> Vec<Recorded> {
        std::mem::take(&mut *self.recorded.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Whether this call is counted, and recorded first when the mode says so.
    #[inline(always)]
    fn counted(&self, realloc: bool, size: usize) -> bool {
        match self.mode.load(Ordering::Relaxed) {
            0 => false,
            1 => !RECORDING.try_with(Cell::get).unwrap_or(true),
            _ => self.record(realloc, size),
        }
    }

    /// [`Mode::Sites`]: records this call's backtrace; whether it is counted. Kept out of line
    /// so that the switched-off path stays a load and a branch.
    #[cold]
    #[inline(never)]
    fn record(&self, realloc: bool, size: usize) -> bool {
        // A thread being torn down has no thread-locals left: neither counted nor recorded
        // (no dispatch runs there).
        if RECORDING.try_with(|r| r.replace(true)).unwrap_or(true) {
            return false;
        }
        let backtrace = Backtrace::force_capture();
        if let Ok(mut recorded) = self.recorded.lock() {
            recorded.push(Recorded {
                realloc,
                size,
                backtrace,
            });
        }
        RECORDING.with(|r| r.set(false));
        true
    }

    /// Whether a deallocation is counted.
    #[inline(always)]
    fn dealloc_counted(&self) -> bool {
        self.mode.load(Ordering::Relaxed) != 0 && !RECORDING.try_with(Cell::get).unwrap_or(true)
    }
}

impl Default for Gate {
    fn default() -> Self {
        Gate::new()
    }
}

// SAFETY: every call is passed on unchanged, with the same layout, to `System`, directly or
// through `StatsAlloc<System>`, which passes it on to `System` after counting.
unsafe impl GlobalAlloc for Gate {
    #[inline(always)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if self.counted(false, layout.size()) {
            self.stats.alloc(layout)
        } else {
            System.alloc(layout)
        }
    }

    #[inline(always)]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if self.counted(false, layout.size()) {
            self.stats.alloc_zeroed(layout)
        } else {
            System.alloc_zeroed(layout)
        }
    }

    #[inline(always)]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if self.dealloc_counted() {
            self.stats.dealloc(ptr, layout)
        } else {
            System.dealloc(ptr, layout)
        }
    }

    #[inline(always)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if self.counted(true, new_size) {
            self.stats.realloc(ptr, layout, new_size)
        } else {
            System.realloc(ptr, layout, new_size)
        }
    }
}
