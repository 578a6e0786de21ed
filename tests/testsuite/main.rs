//! framebench's integration tests, one binary in cargo's own shape (`tests/testsuite/main.rs`
//! with a module per former test file): each `tests/*.rs` file was a test binary of its own,
//! and each linked the whole library with every framework in it, so `cargo test` linked it once
//! per file. A test's path is its module and its name (`tools::required_tools_are_present`),
//! and one module runs alone with a filter: `cargo test --release --test testsuite docs::`.
//!
//! A few tests stay apart, each its own `tests/*.rs` binary, because they need a process of
//! their own: `tests/shutdown.rs` counts the process's threads, which the other tests' servers
//! would change, and `tests/allocs_threads.rs`, `tests/allocs_varies.rs` and
//! `tests/driver_allocs.rs` install the counting allocator as the process's
//! `#[global_allocator]`, whose counters count every thread of the process. The tests here
//! share one process: none may change what the others see of it (an environment variable, the
//! current folder, a signal handler); the `framebench` children they start are theirs alone.

// What many tests share: running `framebench`, its one-line refusals, the report's planted sources.
mod common;

mod allocs;
mod bench_cli;
mod bodies;
mod cli;
mod conformance;
mod delay;
mod docs;
mod driver;
mod guides;
mod h2c;
mod hosts;
mod malformed;
mod memory;
mod oracle_cheats;
mod profile;
mod provenance;
mod redis;
mod scale;
mod shape;
mod tls;
mod tools;
mod ws;
