//! framebench measures what a Rust web framework costs per request.
//!
//! Every framework sits behind one trait, [`framework::Framework`]: build the app from the shared
//! [`fixtures`] and [`options`], dispatch one request in-process, or serve on a listener. The
//! expected response of every scenario is defined once, in [`oracle`], and every mode checks
//! against it before it measures anything.

pub mod ab;
pub mod allocs;
pub mod bench;
pub mod cell;
pub(crate) mod chart;
pub mod check;
pub mod child;
pub mod cli;
pub mod deltas;
pub mod driver;
pub mod env;
pub mod fixtures;
pub mod framework;
pub mod frameworks;
pub mod handlers;
pub mod http1;
#[cfg(feature = "hyper010")]
pub mod hyper010;
pub mod interval;
pub mod logging;
pub mod options;
pub mod oracle;
pub mod pinning;
pub mod quick;
pub mod redis;
pub mod report;
pub mod results;
pub mod server;
pub mod store;
pub mod tools;
pub mod units;
