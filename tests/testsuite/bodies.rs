//! Hostile request bodies ([`framebench::oracle::hostile`]) sent to `POST /upload` of every
//! server that serves the body scenarios: each gets a 4xx or a closed connection within the
//! timeout, never a hang or a crash, and no handler sees a wrong body (a 200 whose digest is of
//! bytes the client did not send as the body), but for the outcomes recorded in [`KNOWN`]. The
//! server keeps serving afterwards. A body far over every default limit is recorded, not
//! gated: `framebench check --conformance` reports what each server does with it
//! (docs/generated/conformance.md), beside each default limit in docs/methodology/bodies.md.

use std::sync::Arc;

use framebench::check::bind_local;
use framebench::fixtures::Fixtures;
use framebench::framework::Config;
use framebench::frameworks::REGISTRY;
use framebench::oracle::hostile::{cases, over_limit, said, Verdict, OVER_NAME};
use framebench::protocol::http1::hostile::{send_case, still_serving};
use framebench::transport::Peer;

/// Wrong bodies handed to a handler by the framework itself, each measured (2026-11-26) and
/// explained in docs/methodology/bodies.md ("Hostile bodies"): besides a refusal, only exactly
/// this outcome is accepted (its status, then the handler's answer: the length and digest of
/// what it was given). Some are races with the client's close (may-minihttp's half body was
/// refused in one run and handed on in the next), so a refusal passes too. framebench measures
/// these frameworks as they are; it does not guard them.
const KNOWN: &[(&str, &str, &str)] = &[
    // `Content-Length` wins over `Transfer-Encoding`: the handler digests the first 5 bytes.
    ("iron", "cl+te", "200 5 4075b296af5d056d"),
    ("nickel", "cl+te", "200 5 4075b296af5d056d"),
    ("ohkami", "cl+te", "200 5 4075b296af5d056d"),
    // The body ends (the client closes) inside a chunk: the 10 bytes that came are the body.
    ("rocket", "lying chunk", "200 10 66c20d5bb80c6cc4"),
    ("xitca", "lying chunk", "200 10 66c20d5bb80c6cc4"),
    // ohkami reads no chunked body: the handler sees an empty one.
    ("ohkami", "lying chunk", "200 0 cbf29ce484222325"),
    // 512 of 1,024 announced bytes, then the client closes: xitca and may-minihttp hand the 512
    // bytes on, ohkami 1,024 bytes (the 512 sent and 512 it did not receive).
    ("xitca", "half body", "200 512 2e7a2c6d33cacb25"),
    ("may-minihttp", "half body", "200 512 2e7a2c6d33cacb25"),
    ("ohkami", "half body", "200 1024 a0e6dc5cc1edf325"),
];

#[test]
fn hostile_bodies_get_a_refusal_and_no_handler_sees_a_wrong_body() {
    let fixtures: Arc<Fixtures> = Fixtures::load_default().unwrap();
    let mut failures = Vec::new();
    let mut over = Vec::new();
    let mut checked = 0;
    // Built once for every server (the over-limit body is 16 MiB).
    let (cases, over_case) = (cases(), over_limit());
    for entry in REGISTRY
        .iter()
        .filter(|e| e.loopback && e.available().is_ok() && e.cannot("upload").is_none())
    {
        let config = Config::new(Arc::clone(&fixtures), None);
        let app = entry.build(&config).unwrap();
        let server = app.serve(bind_local().unwrap()).unwrap();
        let addr = server.addr();
        let after = |what: &str, failures: &mut Vec<String>| {
            if let Err(why) = still_serving(Peer::tcp(addr)) {
                failures.push(format!("{}: after {what}: {why}", entry.name));
            }
        };
        for case in &cases {
            let outcome = send_case(Peer::tcp(addr), case);
            let recorded = KNOWN.iter().any(|(fw, name, what)| {
                *fw == entry.name && *name == case.name && said(&outcome) == *what
            });
            if !Verdict::of(case, &outcome).passes() && !recorded {
                failures.push(format!("{}: {}: {}", entry.name, case.name, said(&outcome)));
            }
            after(case.name, &mut failures);
            checked += 1;
        }
        // Recorded, not judged: but a hang or a server that stops serving fails.
        let outcome = send_case(Peer::tcp(addr), &over_case);
        let verdict = Verdict::of(&over_case, &outcome);
        if verdict == Verdict::Hang {
            failures.push(format!("{}: over limit: {}", entry.name, said(&outcome)));
        }
        over.push(format!("{}: {}", entry.name, verdict.cell()));
        after("over limit", &mut failures);
        server.shutdown().unwrap();
    }
    println!("{OVER_NAME} to POST /upload: {}", over.join(", "));
    assert!(checked >= cases.len(), "no server was checked");
    assert!(failures.is_empty(), "{failures:#?}");
}
