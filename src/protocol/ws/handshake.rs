//! The WebSocket opening handshake (RFC 6455 §4): the client's upgrade request, the server's
//! `101 Switching Protocols`, and the `Sec-WebSocket-Accept` that ties one to the other.

use base64::Engine as _;
use sha1::{Digest as _, Sha1};

/// §1.3: what a server appends to the client's key before hashing it.
const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// The `Sec-WebSocket-Accept` value for a client's `Sec-WebSocket-Key`.
pub(crate) fn accept_key(key: &str) -> String {
    let mut sha = Sha1::new();
    sha.update(key.trim().as_bytes());
    sha.update(GUID.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(sha.finalize())
}

/// A client's key: 16 bytes in base64 (§4.1). Any 16 bytes do for a load; `seed` makes each
/// connection's its own.
pub(crate) fn client_key(seed: u64) -> String {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8..].copy_from_slice(&(!seed).to_le_bytes());
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The client's upgrade request for `path`, with `key`.
pub(crate) fn request(path: &str, key: &str) -> Vec<u8> {
    format!(
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    .into_bytes()
}

/// Whether a comma-separated header value holds `token`, case-insensitively
/// (`Connection: keep-alive, Upgrade`).
fn has_token(value: &[u8], token: &str) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
}

/// What a server makes of a parsed request: the upgrade's answer, or why it is refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Upgrade {
    /// A valid upgrade: the `101` to send, after which the connection speaks frames.
    Accept(Vec<u8>),
    /// Not an upgrade a server may accept: answered `400` with this reason, then closed.
    Refuse(&'static str),
}

/// Judges an upgrade request's headers (§4.2.1), the way a server must: `GET`, an `Upgrade:
/// websocket`, a `Connection` with `upgrade` among its tokens, version 13 and a key of 16 bytes.
pub(crate) fn upgrade(method: &str, headers: &[httparse::Header<'_>]) -> Upgrade {
    let find = |name: &str| {
        headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    };
    if method != "GET" {
        return Upgrade::Refuse("an upgrade is a GET");
    }
    if !find("upgrade").is_some_and(|v| has_token(v, "websocket")) {
        return Upgrade::Refuse("no `Upgrade: websocket`");
    }
    if !find("connection").is_some_and(|v| has_token(v, "upgrade")) {
        return Upgrade::Refuse("no `upgrade` in `Connection`");
    }
    if find("sec-websocket-version").map(<[u8]>::trim_ascii) != Some(b"13") {
        return Upgrade::Refuse("no `Sec-WebSocket-Version: 13`");
    }
    let Some(key) = find("sec-websocket-key").and_then(|k| std::str::from_utf8(k).ok()) else {
        return Upgrade::Refuse("no `Sec-WebSocket-Key`");
    };
    let decoded = base64::engine::general_purpose::STANDARD.decode(key.trim());
    if decoded.map_or(true, |k| k.len() != 16) {
        return Upgrade::Refuse("a `Sec-WebSocket-Key` that is not 16 bytes in base64");
    }
    Upgrade::Accept(
        format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Accept: {}\r\n\r\n",
            accept_key(key)
        )
        .into_bytes(),
    )
}

/// Checks a server's answer to [`request`] with `key` (§4.1): `101`, the upgrade headers, and
/// the accept value of that key.
pub(crate) fn check_answer(
    status: u16,
    headers: &[httparse::Header<'_>],
    key: &str,
) -> anyhow::Result<()> {
    anyhow::ensure!(status == 101, "status {status} to the upgrade (want 101)");
    let find = |name: &str| {
        headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    };
    anyhow::ensure!(
        find("upgrade").is_some_and(|v| has_token(v, "websocket")),
        "no `Upgrade: websocket` in the 101"
    );
    anyhow::ensure!(
        find("connection").is_some_and(|v| has_token(v, "upgrade")),
        "no `Connection: upgrade` in the 101"
    );
    let want = accept_key(key);
    match find("sec-websocket-accept") {
        Some(got) if got.trim_ascii() == want.as_bytes() => Ok(()),
        Some(got) => anyhow::bail!(
            "`Sec-WebSocket-Accept: {}` (want {want})",
            String::from_utf8_lossy(got)
        ),
        None => anyhow::bail!("no `Sec-WebSocket-Accept` in the 101"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header<'a>(name: &'a str, value: &'a str) -> httparse::Header<'a> {
        httparse::Header {
            name,
            value: value.as_bytes(),
        }
    }

    #[test]
    fn the_rfcs_key_gives_the_rfcs_accept() {
        // RFC 6455 §1.3.
        assert_eq!(
            accept_key("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
        assert_eq!(client_key(7).len(), 24);
        assert_ne!(client_key(7), client_key(8));
    }

    #[test]
    fn a_server_accepts_a_valid_upgrade_and_refuses_one_without_a_key() {
        let key = client_key(1);
        let mut valid = vec![
            header("Host", "localhost"),
            header("Upgrade", "WebSocket"),
            header("Connection", "keep-alive, Upgrade"),
            header("Sec-WebSocket-Version", "13"),
            header("Sec-WebSocket-Key", &key),
        ];
        let Upgrade::Accept(answer) = upgrade("GET", &valid) else {
            panic!("refused a valid upgrade");
        };
        // The client's own check takes the server's answer.
        let mut parsed = [httparse::EMPTY_HEADER; 8];
        let mut res = httparse::Response::new(&mut parsed);
        assert!(res.parse(&answer).unwrap().is_complete());
        check_answer(res.code.unwrap(), res.headers, &key).unwrap();
        assert!(check_answer(200, res.headers, &key).is_err());
        assert!(check_answer(101, res.headers, &client_key(2)).is_err());
        assert_eq!(
            upgrade("POST", &valid),
            Upgrade::Refuse("an upgrade is a GET")
        );
        valid.pop();
        assert_eq!(
            upgrade("GET", &valid),
            Upgrade::Refuse("no `Sec-WebSocket-Key`")
        );
        valid.push(header("Sec-WebSocket-Key", "c2hvcnQ="));
        assert!(matches!(upgrade("GET", &valid), Upgrade::Refuse(_)));
    }
}
