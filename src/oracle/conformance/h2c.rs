//! h2c's conformance rules (`framebench check --conformance --protocol h2c`), after HttpArena's
//! h2c checks: a server answers a prior-knowledge preface with its SETTINGS and acknowledges the
//! client's, a request on stream 1 gets the oracle's answer, 100 concurrent streams on one
//! connection all do, and a connection open when the server stops gets GOAWAY. What it does with
//! an HTTP/1.1 request on the same port is recorded, not judged: HttpArena's h2c profile wants it
//! refused, and every server here that reads the preface off an HTTP/1.1 listener serves it
//! instead, by design. `crate::protocol::h2c::rules` probes them.

use super::Rule;

/// Streams the concurrency rule opens at once on one connection.
pub(crate) const STREAMS: usize = 100;

/// The rules and findings, in the table's order: the four judged on a running server, then
/// `goaway` (it stops the server), then two findings recorded, not judged.
pub(crate) const RULES: &[Rule] = &[
    Rule {
        name: "preface",
        what: "the client preface and an empty SETTINGS are answered by the server's SETTINGS, \
               its first frame (RFC 9113 §3.4)",
    },
    Rule {
        name: "settings",
        what: "the client's SETTINGS are acknowledged (a SETTINGS frame with ACK) within 3 s \
               (RFC 9113 §6.5.3)",
    },
    Rule {
        name: "stream 1",
        what: "`GET /` on stream 1 is answered 200 with the oracle's hello",
    },
    Rule {
        name: "100 streams",
        what: "100 `GET /` sent at once on one connection are all answered with the oracle's \
               hello (the client queues past a server's SETTINGS_MAX_CONCURRENT_STREAMS)",
    },
    Rule {
        name: "goaway",
        what: "a connection open and idle when the server is stopped gets GOAWAY before it closes \
               (RFC 9113 §6.8)",
    },
    Rule {
        name: "http/1.1",
        what: "not judged: what an HTTP/1.1 `GET /` on the h2c port gets: `refused` (no HTTP/1.1 \
               answer, HttpArena's rule), or `served` (a server that reads the preface off an \
               HTTP/1.1 listener)",
    },
    Rule {
        name: "advertised",
        what: "the server's SETTINGS_MAX_CONCURRENT_STREAMS and SETTINGS_INITIAL_WINDOW_SIZE \
               (`–`: not sent, so unlimited streams and a 65,535-byte window)",
    },
];
