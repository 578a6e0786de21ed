//! How raw frames a request beyond its request line: the header lines it reads (`Connection`,
//! `Content-Length`, `Transfer-Encoding`), in one pass, and a chunked body, decoded in place.

use super::MAX_BODY;

/// Why raw refuses a chunked body.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// A chunk-size line that is not hex, or a chunk not followed by CRLF.
    Malformed,
    /// More than [`MAX_BODY`] bytes.
    TooLarge,
}

/// Decodes the chunked body at the start of `buf` in place, once it is complete: the body's
/// bytes are moved to the front. Returns the body's length and how many bytes of `buf` the
/// encoded body used, or `None` while it is incomplete (then `buf` is left as it was).
pub(super) fn dechunk_in_place(buf: &mut [u8]) -> Result<Option<(usize, usize)>, Refusal> {
    // First pass: find the end without touching anything, so an incomplete body is read again
    // from the start when more arrives.
    let mut chunks = 0usize;
    let mut at = 0;
    let mut total = 0usize;
    let end = 'chunks: loop {
        let Some(line) = buf[at..].windows(2).position(|w| w == b"\r\n") else {
            return Ok(None);
        };
        let size = chunk_size(&buf[at..at + line]).ok_or(Refusal::Malformed)?;
        at += line + 2;
        if size == 0 {
            // Trailer lines, up to the empty one.
            loop {
                let Some(line) = buf[at..].windows(2).position(|w| w == b"\r\n") else {
                    return Ok(None);
                };
                at += line + 2;
                if line == 0 {
                    break 'chunks at;
                }
            }
        }
        total = total.checked_add(size).ok_or(Refusal::TooLarge)?;
        if total > MAX_BODY {
            return Err(Refusal::TooLarge);
        }
        if buf.len() < at + size + 2 {
            return Ok(None);
        }
        if &buf[at + size..at + size + 2] != b"\r\n" {
            return Err(Refusal::Malformed);
        }
        chunks += 1;
        at += size + 2;
    };
    // Second pass: move each chunk's data to the front.
    let (mut read, mut write) = (0, 0);
    for _ in 0..chunks {
        let line = buf[read..]
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("found in the first pass");
        let size = chunk_size(&buf[read..read + line]).expect("checked in the first pass");
        read += line + 2;
        buf.copy_within(read..read + size, write);
        write += size;
        read += size + 2;
    }
    Ok(Some((total, end)))
}

/// A chunk-size line's size (hex, extensions after `;` ignored), or `None` if it is not one.
fn chunk_size(line: &[u8]) -> Option<usize> {
    let digits = line.split(|&b| b == b';').next()?.trim_ascii();
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    usize::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
}

/// What raw reads from a request's header lines, in one pass over them.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Framing {
    /// Close after answering: `Connection: close`, or HTTP/1.0 without keep-alive.
    pub(super) close: bool,
    /// The body's length, from `Content-Length`.
    pub(super) length: Option<usize>,
    /// The body is `Transfer-Encoding: chunked`.
    pub(super) chunked: bool,
}

/// The framing of a request head, or `None` when it cannot be framed safely: `Content-Length`
/// and `Transfer-Encoding` together (RFC 9112 §6.3 lets a server refuse it, and a proxy in front
/// might read the other one), a length that is not a decimal number, two lengths that differ, or
/// a transfer coding other than `chunked` alone.
pub(super) fn framing(head: &[u8]) -> Option<Framing> {
    let mut lines = head.split(|&b| b == b'\n');
    let http10 = lines
        .next()
        .is_some_and(|l| l.trim_ascii_end().ends_with(b"HTTP/1.0"));
    let mut framing = Framing::default();
    let mut connection = None;
    let mut coded = false;
    // No allocation: this runs on every request.
    for line in lines {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
        if name.eq_ignore_ascii_case(b"connection") {
            connection = Some(value);
        } else if name.eq_ignore_ascii_case(b"content-length") {
            let digits = value.iter().all(u8::is_ascii_digit) && !value.is_empty();
            let length = std::str::from_utf8(value).ok()?.parse().ok().filter(|_| digits)?;
            if framing.length.is_some_and(|l| l != length) {
                return None;
            }
            framing.length = Some(length);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            if coded || !value.eq_ignore_ascii_case(b"chunked") {
                return None;
            }
            coded = true;
            framing.chunked = true;
        }
    }
    if framing.chunked && framing.length.is_some() {
        return None;
    }
    framing.close = match connection {
        Some(v) if v.eq_ignore_ascii_case(b"close") => true,
        Some(v) if v.eq_ignore_ascii_case(b"keep-alive") => false,
        _ => http10,
    };
    Some(framing)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asks_to_close(head: &[u8]) -> bool {
        framing(head).unwrap().close
    }

    #[test]
    fn connection_close_and_http10() {
        assert!(asks_to_close(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close"));
        assert!(asks_to_close(b"GET / HTTP/1.1\r\nconnection:Close"));
        assert!(!asks_to_close(b"GET / HTTP/1.1\r\nHost: a"));
        assert!(asks_to_close(b"GET / HTTP/1.0"));
        assert!(!asks_to_close(b"GET / HTTP/1.0\r\nConnection: keep-alive"));
    }

    #[test]
    fn body_framing_and_refusals() {
        let f = |h: &[u8]| framing(h);
        assert_eq!(
            f(b"POST / HTTP/1.1\r\nContent-Length: 12").unwrap().length,
            Some(12)
        );
        assert!(f(b"POST / HTTP/1.1\r\ntransfer-encoding: Chunked").unwrap().chunked);
        for bad in [
            &b"POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked"[..],
            b"POST / HTTP/1.1\r\nContent-Length: -1",
            b"POST / HTTP/1.1\r\nContent-Length: +5",
            b"POST / HTTP/1.1\r\nContent-Length: abc",
            b"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6",
            b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked",
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked",
        ] {
            assert_eq!(f(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn chunked_bodies_decode_in_place() {
        let mut buf = b"3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\nGET".to_vec();
        let (len, used) = dechunk_in_place(&mut buf).unwrap().unwrap();
        assert_eq!((&buf[..len], &buf[used..]), (&b"abcde"[..], &b"GET"[..]));
        let whole = b"3\r\nabc\r\n0\r\nTrailer: 1\r\n\r\n";
        for cut in 0..whole.len() {
            let mut part = whole[..cut].to_vec();
            assert_eq!(dechunk_in_place(&mut part), Ok(None), "cut at {cut}");
            assert_eq!(part, &whole[..cut], "an incomplete body is left as it was");
        }
        let mut lying = b"10\r\nabc\r\n0\r\n\r\nxxxxxxxxxxxxxxxxxxxxxx".to_vec();
        assert_eq!(dechunk_in_place(&mut lying), Err(Refusal::Malformed));
        let mut bad = b"zz\r\nabc\r\n".to_vec();
        assert_eq!(dechunk_in_place(&mut bad), Err(Refusal::Malformed));
        let mut huge = b"ffffffff\r\n".to_vec();
        assert_eq!(dechunk_in_place(&mut huge), Err(Refusal::TooLarge));
    }
}
