//! The registry: one line per framework. Adding a framework means one Cargo feature, one file
//! here and one line in [`REGISTRY`].

use bytes::Bytes;

use crate::fixtures::Fixtures;
use crate::framework::Entry;
use crate::options::Io;

#[cfg(feature = "actix")]
pub mod actix;
#[cfg(feature = "axum")]
pub mod axum;
#[cfg(feature = "hyper")]
pub mod hyper;
#[cfg(feature = "iron")]
pub mod iron;
#[cfg(feature = "nickel")]
pub mod nickel;
pub mod null;
#[cfg(feature = "hyper010")]
pub mod null010;
pub mod raw;

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
];

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

/// The answer to every scenario path, prepared ahead. The baselines serve these; the not-found
/// case is the fallback, not a row.
pub(crate) fn canned(fixtures: &Fixtures) -> anyhow::Result<Vec<Canned>> {
    let missing = |what: &str| anyhow::anyhow!("fixture {what} missing");
    Ok(vec![
        Canned {
            path: "/",
            status: 200,
            content_type: "text/plain; charset=utf-8",
            body: Bytes::from_static(b"Hello, World!"),
        },
        Canned {
            path: "/static/webupload.html",
            status: 200,
            content_type: "text/html",
            body: fixtures
                .static_file("webupload.html", Io::Memory)
                .map_err(|_| missing("static/webupload.html"))?,
        },
        Canned {
            path: "/template",
            status: 200,
            content_type: "text/html; charset=utf-8",
            body: Bytes::from(fixtures.render()),
        },
        Canned {
            path: "/paste/mysrc",
            status: 200,
            content_type: "text/plain; charset=utf-8",
            body: fixtures
                .paste("mysrc", Io::Memory)
                .map_err(|_| missing("pastes/mysrc"))?,
        },
    ])
}
