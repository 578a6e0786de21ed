//! framebench measures what a Rust web framework costs per request.
//!
//! Every framework sits behind one trait, [`framework::Framework`]: build the app from the shared
//! [`fixtures`] and [`options`], dispatch one request in-process, or serve on a listener. The
//! expected response of every scenario is defined once, in [`oracle`], and every mode checks
//! against it before it measures anything.

#![warn(unreachable_pub, missing_docs)]
// With only some frameworks compiled in (`--no-default-features --features X`, as CI checks
// each), the helpers the others share go unused: dead code is judged with every default
// feature on, where clippy checks it (build.rs sets the cfg). The lib's unit tests are built
// without the framework modules (src/frameworks/mod.rs, `registry!`), which leaves the helpers
// only frameworks use unused there too.
#![cfg_attr(any(framebench_partial, test), allow(dead_code))]

pub mod ab;
pub mod allocs;
pub mod bench;
pub mod cell;
pub(crate) mod chart;
pub mod check;
pub mod child;
pub mod cmd;
pub mod deltas;
pub mod driver;
pub(crate) mod env;
pub mod error;
pub mod fixtures;
pub mod framework;
pub mod frameworks;
pub(crate) mod generated;
pub(crate) mod h2c;
pub(crate) mod handlers;
pub mod http1;
#[cfg(feature = "hyper010")]
pub(crate) mod hyper010;
pub(crate) mod interval;
pub(crate) mod logging;
pub mod options;
pub mod oracle;
pub mod outcome;
pub mod pinning;
pub(crate) mod plotting;
pub(crate) mod proc;
pub(crate) mod provenance;
pub mod quick;
pub mod redis;
pub mod report;
pub mod results;
pub mod scale;
pub(crate) mod select;
pub mod serve;
pub(crate) mod server;
pub(crate) mod store;
pub(crate) mod table;
pub(crate) mod timing;
pub mod tools;
pub(crate) mod units;
pub(crate) mod versioned;
