//! HTTP/1.1's conformance rules: TechEmpower's header rules and some of HttpArena's protocol
//! checks, each probed over raw HTTP/1.1 by `crate::protocol::http1::rules`.

use std::time::Duration;

use super::Rule;

/// How long after the first `Date` the second is asked for (TechEmpower's 3 s: more than the
/// header's one-second resolution, so a server that computes it per request or refreshes a
/// cached one every second shows a new value).
pub(crate) const DATE_GAP: Duration = Duration::from_secs(3);

/// The rules, in the table's order. The last, the `Date` that must change, needs [`DATE_GAP`]
/// between two answers.
pub(crate) const RULES: &[Rule] = &[
    Rule {
        name: "server",
        what: "every answer carries a `Server` header (TechEmpower)",
    },
    Rule {
        name: "date",
        what: "every answer carries a `Date` header in the HTTP-date form (TechEmpower)",
    },
    Rule {
        name: "framing",
        what: "every answer is framed by `Content-Length` or `Transfer-Encoding: chunked` \
               (TechEmpower), not by closing the connection",
    },
    Rule {
        name: "close",
        what: "a request with `Connection: close` is answered, then the server closes the \
               connection (HttpArena; wrk#197)",
    },
    Rule {
        name: "head",
        what: "`HEAD /` is answered without a body: the `GET /json` sent behind it on the same \
               connection is answered next, intact (HttpArena)",
    },
    Rule {
        name: "http/1.0",
        what: "`GET / HTTP/1.0` without a Host header is answered as the oracle says (HttpArena)",
    },
    Rule {
        name: "pipelined",
        what: "three requests in one write are answered in order, each as the oracle says \
               (HttpArena)",
    },
    Rule {
        name: "split",
        what: "a request split across two TCP segments 50 ms apart is answered (HttpArena)",
    },
    Rule {
        name: "date moves",
        what: "the `Date` of an answer 3 s after another differs from it (TechEmpower)",
    },
];
