//! The registry: one line per framework. Adding a framework means one Cargo feature, one file
//! here and one line in [`REGISTRY`] (docs/adding-a-framework.md walks through it).
//!
//! Every framework file reads in the same order, so that knowing one is knowing them all:
//!
//! 1. **Module doc**: the framework and its version, how the app is written (its router, static
//!    files, logger), how in-process requests reach it, how it serves and what `threads` means.
//! 2. **The app type**, `pub struct <Name>`: what `build` keeps.
//! 3. **`fn app(config)`**: the one place the app is put together (routes, static files for each
//!    io mode, the logger when logging is on), used by in-process and served requests alike.
//!    The shared state is [`crate::handlers::AppState`].
//! 4. **`impl Framework`**: the constants, then `build`, `dispatch`, `serve`.
//! 5. **Handlers**, one per route, in the order of the routes: each extracts what the framework
//!    hands it and calls [`crate::handlers`], which answers with a [`crate::handlers::Reply`].
//! 6. **Glue**: the one conversion from `Reply` into the framework's response, then whatever
//!    this framework needs that the others do not (guards, a logger middleware around
//!    [`crate::logging::Started`], copies of private framework code). Each difference carries
//!    its fairness comment where it happens.
//!
//! The baselines (`null`, `null-hyper010`, `raw`) serve [`canned`] answers instead of handlers,
//! and the Go peers are programs of their own; they follow the same order where it applies.
//! may-minihttp serves from a child framebench process ([`crate::server::peer`]).

use bytes::Bytes;

use crate::fixtures::Fixtures;
use crate::framework::Entry;
use crate::oracle::SCENARIOS;

#[cfg(feature = "actix")]
pub mod actix;
#[cfg(feature = "axum")]
pub mod axum;
#[cfg(feature = "axum07")]
pub mod axum07;
#[cfg(feature = "go")]
pub mod go;
#[cfg(feature = "gotham")]
pub mod gotham;
#[cfg(feature = "hyper")]
pub mod hyper;
#[cfg(feature = "hyper014")]
pub mod hyper014;
#[cfg(feature = "iron")]
pub mod iron;
#[cfg(feature = "may-minihttp")]
pub mod may_minihttp;
#[cfg(feature = "nickel")]
pub mod nickel;
#[cfg(feature = "ntex")]
pub mod ntex;
pub mod null;
#[cfg(feature = "hyper010")]
pub mod null010;
#[cfg(feature = "poem")]
pub mod poem;
pub mod raw;
#[cfg(feature = "rocket")]
pub mod rocket;
#[cfg(feature = "salvo")]
pub mod salvo;
#[cfg(feature = "warp")]
pub mod warp;
#[cfg(feature = "xitca")]
pub mod xitca;

/// Every framework compiled in, baselines first.
pub const REGISTRY: &[Entry] = &[
    Entry::of::<null::Null>(),
    #[cfg(feature = "hyper010")]
    Entry::of::<null010::Null010>(),
    Entry::of::<raw::Raw>(),
    #[cfg(feature = "iron")]
    Entry::of::<iron::Iron>(),
    #[cfg(feature = "nickel")]
    Entry::of::<nickel::Nickel>(),
    #[cfg(feature = "actix")]
    Entry::of::<actix::Actix>(),
    #[cfg(feature = "axum")]
    Entry::of::<axum::Axum>(),
    #[cfg(feature = "hyper")]
    Entry::of::<hyper::Hyper>(),
    #[cfg(feature = "rocket")]
    Entry::of::<rocket::Rocket>(),
    #[cfg(feature = "gotham")]
    Entry::of::<gotham::Gotham>(),
    #[cfg(feature = "poem")]
    Entry::of::<poem::Poem>(),
    #[cfg(feature = "warp")]
    Entry::of::<warp::Warp>(),
    #[cfg(feature = "salvo")]
    Entry::of::<salvo::Salvo>(),
    #[cfg(feature = "xitca")]
    Entry::of::<xitca::Xitca>(),
    #[cfg(feature = "ntex")]
    Entry::of::<ntex::Ntex>(),
    #[cfg(feature = "axum07")]
    Entry::of::<axum07::Axum07>(),
    #[cfg(feature = "hyper014")]
    Entry::of::<hyper014::Hyper014>(),
    #[cfg(feature = "may-minihttp")]
    Entry::of::<may_minihttp::MayMinihttp>(),
    #[cfg(feature = "go")]
    Entry::of::<go::GoPeer<go::NetHttp>>(),
    #[cfg(feature = "go")]
    Entry::of::<go::GoPeer<go::Fiber>>(),
];

/// The in-process floor in-process figures are read against: the first in-process baseline
/// (`null`).
pub fn floor() -> Option<&'static Entry> {
    REGISTRY.iter().find(|e| e.baseline && e.in_process)
}

/// The loopback ceiling loopback figures are read against: the baseline with a server (`raw`).
pub fn ceiling() -> Option<&'static Entry> {
    REGISTRY.iter().find(|e| e.baseline && e.loopback)
}

/// Looks a framework up by name.
pub fn find(name: &str) -> Option<&'static Entry> {
    REGISTRY.iter().find(|e| e.name == name)
}

/// Names of every framework compiled in.
pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|e| e.name).collect()
}

/// A response computed once at startup, for the baselines that skip routing and handlers.
pub(crate) struct Canned {
    pub path: &'static str,
    pub status: u16,
    pub content_type: &'static str,
    pub body: Bytes,
}

/// The answer to every scenario the oracle answers with a body, prepared ahead from the
/// oracle's own table. The baselines serve these; the not-found case is the fallback, not a
/// row.
// Fairness: the baselines answer the redis scenario from the seeded value, canned, without
// asking Redis: they stay the floor and ceiling of the HTTP work alone (docs/methodology.md).
pub(crate) fn canned(fixtures: &Fixtures) -> anyhow::Result<Vec<Canned>> {
    SCENARIOS
        .iter()
        .filter_map(|s| Some((s, s.content_type?)))
        .map(|(scenario, content_type)| {
            let expected = scenario.expected(fixtures)?;
            let body = expected.body().cloned().unwrap_or_default();
            Ok(Canned {
                path: scenario.path,
                status: scenario.status,
                content_type,
                body,
            })
        })
        .collect()
}
