//! framebench measures what a Rust web framework costs per request.
//!
//! Every framework sits behind one trait, [`framework::Framework`]: build the app from the shared
//! [`fixtures`] and [`options`], dispatch one request in-process, or serve on a listener. The
//! expected response of every scenario is defined once, in [`oracle`], and every mode checks
//! against it before it measures anything.
//!
//! The layers, each using only those below it:
//! - **Commands**: `main.rs` dispatches to [`cmd`]`/<name>.rs`, one home per command (its
//!   arguments and its `run`); the topic modules they call: `quick`, `report`, `scale`,
//!   `timing`, `ab`, [`check`], [`allocs`], [`driver`] (`load`, `compare`, `merge`).
//! - **Measurement core**: [`bench`] (checked cells, batches, the benches' shared code),
//!   [`cell`], `paired` (paired rounds), `timing` (interleaved rounds), [`driver`] (the load
//!   client), `interval` (a median with its bounds), [`child`], [`pinning`], `proc`,
//!   `interrupt`, [`tools`], `build_step`.
//! - **Oracle and protocols**: [`oracle`] (every scenario's expected response, the conformance
//!   rules and hostile cases, as data), [`protocol`] (each protocol's client, its check before a
//!   load and its conformance probes), [`transport`] (what a protocol runs over: TCP or TLS),
//!   `conformance` (the one runner of a protocol's rules).
//! - **Frameworks**: [`framework`] (the trait), [`frameworks`] (the registry), [`fixtures`],
//!   [`options`], `handlers`, `server`, `logging`, `store`, [`redis`].
//! - **Output**: [`results`] (the one results file), `table` and `units` (every printer),
//!   `chart` (bars and lines), `env` and `provenance` (what every result carries), `generated`
//!   (the stamp), `versioned` (reading our own files back), [`error`] (the CLI's one error).

#![warn(unreachable_pub, missing_docs)]
// With only some frameworks compiled in (`--no-default-features --features X`, as CI checks
// each), the helpers the others share go unused: dead code is judged with every default
// feature on, where clippy checks it (build.rs sets the cfg). The lib's unit tests are built
// without the framework modules (src/frameworks/mod.rs, `registry!`), which leaves the helpers
// only frameworks use unused there too.
#![cfg_attr(any(framebench_partial, test), allow(dead_code))]

pub(crate) mod ab;
pub mod allocs;
pub(crate) mod autobahn;
pub mod bench;
pub(crate) mod build_step;
pub mod cell;
pub(crate) mod chart;
pub mod check;
pub mod child;
pub mod cmd;
pub(crate) mod conformance;
pub mod driver;
pub(crate) mod env;
pub mod error;
pub mod fixtures;
pub(crate) mod footprint;
pub mod framework;
pub mod frameworks;
pub(crate) mod generated;
pub(crate) mod handlers;
#[cfg(feature = "hyper010")]
pub(crate) mod hyper010;
pub(crate) mod interrupt;
pub(crate) mod interval;
pub(crate) mod logging;
pub(crate) mod memory;
pub mod options;
pub mod oracle;
pub mod outcome;
pub(crate) mod paired;
pub mod pinning;
pub(crate) mod proc;
pub mod protocol;
pub(crate) mod provenance;
pub(crate) mod quick;
pub mod redis;
pub(crate) mod report;
pub mod results;
pub(crate) mod scale;
pub(crate) mod select;
pub(crate) mod serve;
pub(crate) mod server;
pub(crate) mod startup;
pub(crate) mod store;
pub(crate) mod table;
pub(crate) mod timing;
pub mod tools;
pub mod transport;
pub(crate) mod units;
pub(crate) mod versioned;
