//! Hostile and malformed HTTP sent to every server: garbage, oversized heads, truncated
//! requests. Each gets a 4xx or a closed connection within the timeout, never a 2xx or a hang,
//! and the server keeps serving afterwards.

use std::sync::Arc;

use framebench::check::bind_local;
use framebench::fixtures::Fixtures;
use framebench::framework::Config;
use framebench::frameworks::REGISTRY;
use framebench::protocol::http1::raw_get;

use framebench::oracle::hostile::Outcome;
use framebench::protocol::http1::hostile::send as send_hostile;
use framebench::transport::Peer;

/// What a server answers that is not a 4xx, as measured (docs/methodology/fairness.md): net/http puts no
/// limit on the number of headers within its 1 MiB `MaxHeaderBytes`; fasthttp (Fiber) serves
/// `HTTP/9.9` as HTTP/1.1; ohkami splits the request line at its first two spaces, so
/// `GET /a b/c HTTP/1.1` has the version `b/c HTTP/1.1`, which it refuses with 505. Each still
/// answers and keeps serving; anything else from them fails the test. (505 for an unknown
/// version is the HTTP answer and is accepted from anyone.)
const KNOWN_ANSWERS: &[(&str, &str, u16)] = &[
    ("go-nethttp", "thousands of headers", 200),
    ("go-fiber", "bad version", 200),
    ("ohkami", "space in target", 505),
];

fn cases() -> Vec<(&'static str, Vec<u8>, bool)> {
    let mut big = b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: ".to_vec();
    big.extend(std::iter::repeat_n(b'a', 4 * 1024 * 1024));
    big.extend_from_slice(b"\r\n\r\n");
    let mut many = b"GET / HTTP/1.1\r\nHost: localhost\r\n".to_vec();
    for i in 0..2000 {
        many.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    let junk: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    vec![
        ("garbage line", b"GARBAGE\r\n\r\n".to_vec(), false),
        ("binary junk", junk, true),
        ("oversized header value", big, false),
        ("thousands of headers", many, false),
        (
            "truncated head",
            b"GET / HTTP/1.1\r\nHost: loc".to_vec(),
            true,
        ),
        (
            "NUL in method",
            b"G\0T / HTTP/1.1\r\nHost: localhost\r\n\r\n".to_vec(),
            false,
        ),
        (
            "bad version",
            b"GET / HTTP/9.9\r\nHost: localhost\r\n\r\n".to_vec(),
            false,
        ),
        (
            "space in target",
            b"GET /a b/c HTTP/1.1\r\nHost: localhost\r\n\r\n".to_vec(),
            false,
        ),
    ]
}

#[test]
fn servers_survive_malformed_http() {
    let fixtures: Arc<Fixtures> = Fixtures::load_default().unwrap();
    let mut failures = Vec::new();
    let mut checked = 0;
    for entry in REGISTRY
        .iter()
        .filter(|e| e.loopback && e.available().is_ok())
    {
        let config = Config::new(Arc::clone(&fixtures), None);
        let app = entry.build(&config).unwrap();
        let server = app.serve(bind_local().unwrap()).unwrap();
        let addr = server.addr();
        for (name, bytes, half_close) in cases() {
            match send_hostile(Peer::tcp(addr), &bytes, half_close) {
                Ok(Outcome::Status(s, _)) if (400..500).contains(&s) => {}
                Ok(Outcome::Closed) => {}
                Ok(Outcome::Status(505, _)) if name == "bad version" => {}
                Ok(Outcome::Status(s, _)) if KNOWN_ANSWERS.contains(&(entry.name, name, s)) => {}
                Ok(Outcome::Status(s, _)) => {
                    failures.push(format!("{}: {name}: status {s}", entry.name))
                }
                Err(e) => failures.push(format!("{}: {name}: {e}", entry.name)),
            }
            // Still serving.
            match raw_get(addr, "/") {
                Ok(got) if got.status == 200 && &got.body[..] == b"Hello, World!" => {}
                other => failures.push(format!("{}: after {name}: {other:?}", entry.name)),
            }
            checked += 1;
        }
        server.shutdown().unwrap();
    }
    assert!(checked >= cases().len(), "no server was checked");
    assert!(failures.is_empty(), "{failures:#?}");
}
