//! Hostile request bodies sent to `POST /upload` of every server that serves the body
//! scenarios: each gets a 4xx or a closed connection within the timeout, never a hang or a
//! crash, and no handler sees a wrong body (a 200 whose digest is of bytes the client did not
//! send as the body). The server keeps serving afterwards. A body far over every default limit
//! is recorded, not gated: what each server does with it goes in docs/methodology/bodies.md,
//! "Body limits".

use std::sync::Arc;

use bytes::Bytes;
use framebench::check::{bind_local, raw_get};
use framebench::fixtures::Fixtures;
use framebench::framework::Config;
use framebench::frameworks::REGISTRY;
use framebench::oracle::fnv1a64;

#[path = "common/hostile.rs"]
mod hostile;
use hostile::{send, Outcome};

/// The over-limit body: past every default limit of the frameworks measured (the largest is
/// trillium's 10 MB), so each shows what it does past its own.
const OVER: usize = 16 * 1024 * 1024;

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

/// A case: its name, the bytes, whether the client then closes its writing half, and the body a
/// 200 may have digested (`None`: any 200 is wrong).
struct Case {
    name: &'static str,
    bytes: Vec<u8>,
    half_close: bool,
    right: Option<&'static [u8]>,
}

fn post(headers: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "POST /upload HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/octet-stream\r\n\
         {headers}Connection: close\r\n\r\n"
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

fn cases() -> Vec<Case> {
    vec![
        // RFC 9112 §6.3: with both, Transfer-Encoding wins (or the server refuses). A handler
        // that digests `hello` read the length instead: the smuggling shape.
        Case {
            name: "cl+te",
            bytes: post(
                "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
                b"b\r\nhello world\r\n0\r\n\r\n",
            ),
            half_close: false,
            right: Some(b"hello world"),
        },
        Case {
            name: "negative length",
            bytes: post("Content-Length: -1\r\n", b"abc"),
            half_close: true,
            right: None,
        },
        Case {
            name: "non-numeric length",
            bytes: post("Content-Length: abc\r\n", b"abc"),
            half_close: true,
            right: None,
        },
        // 0x10 bytes announced, 3 sent, then the end of the body: the chunk size lies.
        Case {
            name: "lying chunk",
            bytes: post("Transfer-Encoding: chunked\r\n", b"10\r\nabc\r\n0\r\n\r\n"),
            half_close: true,
            right: None,
        },
        Case {
            name: "half body",
            bytes: post("Content-Length: 1024\r\n", &[b'x'; 512]),
            half_close: true,
            right: None,
        },
    ]
}

/// What a server did, in a few words, for the report.
fn said(outcome: &anyhow::Result<Outcome>) -> String {
    match outcome {
        Ok(Outcome::Status(s, body)) => format!(
            "{s} {}",
            String::from_utf8_lossy(&body[..body.len().min(40)])
        ),
        Ok(Outcome::Closed) => "closed".into(),
        Err(e) => format!("{e}"),
    }
}

/// Whether a 200 answered with a digest of `right`, the body the client sent.
fn digest_of(body: &Bytes, right: &[u8]) -> bool {
    body[..] == *format!("{} {:016x}", right.len(), fnv1a64(right)).as_bytes()
}

#[test]
fn hostile_bodies_get_a_refusal_and_no_handler_sees_a_wrong_body() {
    let fixtures: Arc<Fixtures> = Fixtures::load_default().unwrap();
    let mut failures = Vec::new();
    let mut over_limit = Vec::new();
    let mut checked = 0;
    for entry in REGISTRY
        .iter()
        .filter(|e| e.loopback && e.available().is_ok() && e.cannot("upload").is_none())
    {
        let config = Config::new(Arc::clone(&fixtures), None);
        let app = entry.build(&config).unwrap();
        let server = app.serve(bind_local().unwrap()).unwrap();
        let addr = server.addr();
        for case in cases() {
            let outcome = send(addr, &case.bytes, case.half_close);
            let fine = match &outcome {
                Ok(Outcome::Status(s, _)) if (400..500).contains(s) => true,
                Ok(Outcome::Closed) => true,
                Ok(Outcome::Status(200, body)) => case.right.is_some_and(|r| digest_of(body, r)),
                _ => false,
            };
            let recorded = KNOWN.iter().any(|(fw, name, what)| {
                *fw == entry.name && *name == case.name && said(&outcome) == *what
            });
            if !fine && !recorded {
                failures.push(format!("{}: {}: {}", entry.name, case.name, said(&outcome)));
            }
            still_serving(addr, entry.name, case.name, &mut failures);
            checked += 1;
        }
        let mut huge = post(&format!("Content-Length: {OVER}\r\n"), &[]);
        huge.resize(huge.len() + OVER, b'x');
        let outcome = send(addr, &huge, false);
        over_limit.push(format!("{}: {}", entry.name, said(&outcome)));
        if outcome.is_err() {
            failures.push(format!("{}: over limit: {}", entry.name, said(&outcome)));
        }
        still_serving(addr, entry.name, "over limit", &mut failures);
        server.shutdown().unwrap();
    }
    // The record the methodology's "Body limits" table comes from (`--nocapture`).
    println!("a {OVER}-byte body, Content-Length, to POST /upload:");
    for line in &over_limit {
        println!("  {line}");
    }
    assert!(checked >= cases().len(), "no server was checked");
    assert!(failures.is_empty(), "{failures:#?}");
}

fn still_serving(addr: std::net::SocketAddr, fw: &str, after: &str, failures: &mut Vec<String>) {
    match raw_get(addr, "/") {
        Ok(got) if got.status == 200 && &got.body[..] == b"Hello, World!" => {}
        other => failures.push(format!("{fw}: after {after}: {other:?}")),
    }
}
