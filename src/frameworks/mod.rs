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
#[cfg(feature = "go")]
pub mod go;
#[cfg(feature = "gotham")]
pub mod gotham;
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
#[cfg(feature = "rocket")]
pub mod rocket;

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
    Entry::of::<rocket::Rocket5>(),
    #[cfg(feature = "gotham")]
    Entry::of::<gotham::Gotham>(),
    #[cfg(feature = "go")]
    Entry::of::<go::GoPeer<go::NetHttp>>(),
    #[cfg(feature = "go")]
    Entry::of::<go::GoPeer<go::Fiber>>(),
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
        Canned {
            path: "/json",
            status: 200,
            content_type: JSON,
            body: Bytes::from(json_body()),
        },
        // Fairness: the baselines answer the redis scenario from the seeded value, canned,
        // without asking Redis: they stay the floor and ceiling of the HTTP work alone
        // (docs/methodology.md).
        Canned {
            path: "/get?key=foo",
            status: 200,
            content_type: crate::redis::CONTENT_TYPE,
            body: Bytes::from_static(crate::redis::VALUE.as_bytes()),
        },
    ])
}

/// Content type of the json scenario.
pub(crate) const JSON: &str = "application/json";

/// The json scenario's object.
#[derive(serde::Serialize)]
pub(crate) struct Message {
    /// Always `Hello, World!`.
    pub message: &'static str,
}

/// Serializes the json scenario's body with serde_json. Every framework calls this per request
/// (TechEmpower's rule: no response cached); the baselines call it once.
pub(crate) fn json_body() -> Vec<u8> {
    serde_json::to_vec(&Message {
        message: "Hello, World!",
    })
    .expect("a struct of one string serializes")
}
