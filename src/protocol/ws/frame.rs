//! WebSocket frames (RFC 6455 §5), written by hand for both ends framebench runs: the load
//! driver's client, which masks what it sends and reads the server's frames on its own
//! non-blocking loop, and raw's reference echo server, which unmasks in place and echoes into
//! its output buffer. tungstenite, the well-kept crate, reads into a buffer it zero-fills and
//! copies every frame into a message it allocates; both ends here must cost as little as the
//! HTTP/1.1 paths beside them (one read, one write, nothing allocated per message), so the
//! framing is this module's, and tungstenite is the test's judge of it
//! (`tests/testsuite/ws.rs`).
//!
//! No extension is negotiated (no `permessage-deflate`), so a frame with an RSV bit set is a
//! protocol error, as is any reserved opcode.

use std::fmt;

/// A frame's opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Opcode {
    Continuation,
    Text,
    Binary,
    Close,
    Ping,
    Pong,
}

impl Opcode {
    fn from_bits(bits: u8) -> Option<Opcode> {
        Some(match bits {
            0x0 => Opcode::Continuation,
            0x1 => Opcode::Text,
            0x2 => Opcode::Binary,
            0x8 => Opcode::Close,
            0x9 => Opcode::Ping,
            0xA => Opcode::Pong,
            _ => return None,
        })
    }

    fn bits(self) -> u8 {
        match self {
            Opcode::Continuation => 0x0,
            Opcode::Text => 0x1,
            Opcode::Binary => 0x2,
            Opcode::Close => 0x8,
            Opcode::Ping => 0x9,
            Opcode::Pong => 0xA,
        }
    }

    /// Close, Ping and Pong: never fragmented, at most 125 bytes.
    pub(crate) fn is_control(self) -> bool {
        matches!(self, Opcode::Close | Opcode::Ping | Opcode::Pong)
    }
}

/// Which end reads: a server reads masked frames only, a client unmasked ones only (§5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    Server,
    Client,
}

/// A frame's head, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) fin: bool,
    pub(crate) opcode: Opcode,
    /// The masking key, on a client's frame.
    pub(crate) mask: Option<[u8; 4]>,
    /// The payload's length.
    pub(crate) len: usize,
    /// The head's own length: the payload starts there.
    pub(crate) head_len: usize,
}

impl Head {
    /// The whole frame's length.
    pub(crate) fn frame_len(&self) -> usize {
        self.head_len + self.len
    }
}

/// What makes a frame unacceptable: the close code to answer it with, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Violation {
    pub(crate) code: u16,
    pub(crate) why: &'static str,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (close {})", self.why, self.code)
    }
}

/// Close 1002: a protocol error.
pub(crate) const PROTOCOL_ERROR: u16 = 1002;
/// Close 1007: a text message that is not UTF-8.
pub(crate) const INVALID_DATA: u16 = 1007;
/// Close 1009: a message over the reader's limit.
pub(crate) const TOO_BIG: u16 = 1009;

const fn violation(code: u16, why: &'static str) -> Violation {
    Violation { code, why }
}

/// Parses the head at the start of `buf`, read by `role`: `Ok(None)` until the whole head is
/// there; `Err` for a frame no reader may accept, or one whose payload is over `max` bytes.
pub(crate) fn parse_head(buf: &[u8], role: Role, max: usize) -> Result<Option<Head>, Violation> {
    let [b0, b1, ..] = *buf else {
        return Ok(None);
    };
    if b0 & 0x70 != 0 {
        return Err(violation(
            PROTOCOL_ERROR,
            "an RSV bit set, with no extension",
        ));
    }
    let opcode =
        Opcode::from_bits(b0 & 0x0F).ok_or(violation(PROTOCOL_ERROR, "a reserved opcode"))?;
    let fin = b0 & 0x80 != 0;
    let masked = b1 & 0x80 != 0;
    match (role, masked) {
        (Role::Server, false) => {
            return Err(violation(PROTOCOL_ERROR, "an unmasked frame from a client"));
        }
        (Role::Client, true) => {
            return Err(violation(PROTOCOL_ERROR, "a masked frame from a server"));
        }
        _ => {}
    }
    let (len, mut head_len) = match b1 & 0x7F {
        126 => match buf.get(2..4) {
            Some(b) => (u64::from(u16::from_be_bytes([b[0], b[1]])), 4),
            None => return Ok(None),
        },
        127 => match buf.get(2..10) {
            Some(b) => {
                let n = u64::from_be_bytes(b.try_into().expect("8 bytes"));
                if n >> 63 != 0 {
                    return Err(violation(PROTOCOL_ERROR, "a length with its top bit set"));
                }
                (n, 10)
            }
            None => return Ok(None),
        },
        n => (u64::from(n), 2),
    };
    if opcode.is_control() && (!fin || len > 125) {
        return Err(violation(
            PROTOCOL_ERROR,
            "a control frame fragmented or over 125 bytes",
        ));
    }
    if len > max as u64 {
        return Err(violation(TOO_BIG, "a frame over the limit"));
    }
    let mask = if masked {
        let Some(key) = buf.get(head_len..head_len + 4) else {
            return Ok(None);
        };
        head_len += 4;
        Some(key.try_into().expect("4 bytes"))
    } else {
        None
    };
    Ok(Some(Head {
        fin,
        opcode,
        mask,
        len: len as usize,
        head_len,
    }))
}

/// XORs `payload` with `key` (§5.3): masks and unmasks alike. `offset` is where `payload`
/// starts within the frame's payload, for a payload unmasked in pieces.
pub(crate) fn apply_mask(payload: &mut [u8], key: [u8; 4], offset: usize) {
    for (i, b) in payload.iter_mut().enumerate() {
        *b ^= key[(offset + i) & 3];
    }
}

/// Appends a frame's head to `out`; `mask` for a client's frame, whose payload the caller
/// then appends masked with it ([`put_frame`] does both).
pub(crate) fn put_head(
    out: &mut Vec<u8>,
    fin: bool,
    opcode: Opcode,
    len: usize,
    mask: Option<[u8; 4]>,
) {
    out.push((u8::from(fin) << 7) | opcode.bits());
    let masked = u8::from(mask.is_some()) << 7;
    match len {
        0..=125 => out.push(masked | len as u8),
        126..=0xFFFF => {
            out.push(masked | 126);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            out.push(masked | 127);
            out.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    if let Some(key) = mask {
        out.extend_from_slice(&key);
    }
}

/// Appends a whole frame to `out`, its payload masked with `mask` when given.
pub(crate) fn put_frame(
    out: &mut Vec<u8>,
    fin: bool,
    opcode: Opcode,
    payload: &[u8],
    mask: Option<[u8; 4]>,
) {
    put_head(out, fin, opcode, payload.len(), mask);
    let start = out.len();
    out.extend_from_slice(payload);
    if let Some(key) = mask {
        apply_mask(&mut out[start..], key, 0);
    }
}

/// UTF-8 checked across a text message's fragments: a code point may be split between two
/// frames, and bad input is refused as soon as it arrives (Autobahn's 6.x cases judge how
/// soon), not only at the message's end.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Utf8Stream {
    carry: [u8; 4],
    carried: usize,
}

impl Utf8Stream {
    /// Takes the next bytes of the message: `Err` once they cannot be UTF-8, whatever follows.
    pub(crate) fn feed(&mut self, mut bytes: &[u8]) -> Result<(), ()> {
        if self.carried > 0 {
            // Complete the code point the last fragment ended in.
            let width = match self.carry[0] {
                0xC2..=0xDF => 2,
                0xE0..=0xEF => 3,
                _ => 4,
            };
            let take = (width - self.carried).min(bytes.len());
            self.carry[self.carried..self.carried + take].copy_from_slice(&bytes[..take]);
            self.carried += take;
            bytes = &bytes[take..];
            match std::str::from_utf8(&self.carry[..self.carried]) {
                Ok(_) => self.carried = 0,
                Err(e) if e.error_len().is_none() => return Ok(()),
                Err(_) => return Err(()),
            }
        }
        match std::str::from_utf8(bytes) {
            Ok(_) => Ok(()),
            Err(e) if e.error_len().is_some() => Err(()),
            Err(e) => {
                let rest = &bytes[e.valid_up_to()..];
                self.carry[..rest.len()].copy_from_slice(rest);
                self.carried = rest.len();
                Ok(())
            }
        }
    }

    /// The message ended: `Err` when it ended inside a code point.
    pub(crate) fn finish(&mut self) -> Result<(), ()> {
        let whole = self.carried == 0;
        *self = Utf8Stream::default();
        if whole {
            Ok(())
        } else {
            Err(())
        }
    }
}

/// Whether a Close frame's payload is one a peer may send (§5.5.1, §7.4): empty, or a code
/// that is not reserved and an optional UTF-8 reason.
pub(crate) fn close_payload_ok(payload: &[u8]) -> Result<(), Violation> {
    match payload {
        [] => Ok(()),
        [_] => Err(violation(PROTOCOL_ERROR, "a close payload of one byte")),
        [hi, lo, reason @ ..] => {
            let code = u16::from_be_bytes([*hi, *lo]);
            let allowed = matches!(code, 1000..=1003 | 1007..=1011 | 3000..=4999);
            if !allowed {
                return Err(violation(PROTOCOL_ERROR, "a close code no peer may send"));
            }
            std::str::from_utf8(reason)
                .map(drop)
                .map_err(|_| violation(INVALID_DATA, "a close reason that is not UTF-8"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: [u8; 4] = [0x37, 0xFA, 0x21, 0x3D];

    #[test]
    fn the_rfcs_masked_hello_parses_and_unmasks() {
        // RFC 6455 §5.7: a masked text frame "Hello" from a client.
        let mut frame = vec![
            0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58,
        ];
        let head = parse_head(&frame, Role::Server, 1 << 20).unwrap().unwrap();
        assert_eq!(
            head,
            Head {
                fin: true,
                opcode: Opcode::Text,
                mask: Some(KEY),
                len: 5,
                head_len: 6,
            }
        );
        let payload = &mut frame[head.head_len..head.frame_len()];
        apply_mask(payload, head.mask.unwrap(), 0);
        assert_eq!(payload, b"Hello");
        // The same, written by put_frame, is the same bytes.
        let mut out = Vec::new();
        put_frame(&mut out, true, Opcode::Text, b"Hello", Some(KEY));
        assert_eq!(
            out,
            [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]
        );
        // And unmasked, as a server sends it (§5.7's first example).
        out.clear();
        put_frame(&mut out, true, Opcode::Text, b"Hello", None);
        assert_eq!(out, [0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f]);
        assert_eq!(parse_head(&out, Role::Client, 125).unwrap().unwrap().len, 5);
    }

    #[test]
    fn lengths_take_7_16_and_64_bits_and_a_head_waits_for_its_bytes() {
        for len in [0, 125, 126, 65_535, 65_536, 1 << 24] {
            let mut out = Vec::new();
            put_head(&mut out, true, Opcode::Binary, len, Some(KEY));
            for cut in 0..out.len() {
                assert_eq!(parse_head(&out[..cut], Role::Server, usize::MAX), Ok(None));
            }
            let head = parse_head(&out, Role::Server, usize::MAX).unwrap().unwrap();
            assert_eq!((head.len, head.head_len), (len, out.len()), "{len}");
        }
    }

    #[test]
    fn frames_no_reader_may_accept_are_refused_with_their_close_code() {
        let code = |bytes: &[u8], role| parse_head(bytes, role, 1 << 20).unwrap_err().code;
        // Unmasked from a client, masked from a server.
        assert_eq!(code(&[0x81, 0x00], Role::Server), PROTOCOL_ERROR);
        assert_eq!(
            code(&[0x81, 0x80, 0, 0, 0, 0], Role::Client),
            PROTOCOL_ERROR
        );
        // RSV1 with no extension, a reserved opcode.
        assert_eq!(code(&[0xC1, 0x80], Role::Server), PROTOCOL_ERROR);
        assert_eq!(code(&[0x83, 0x80], Role::Server), PROTOCOL_ERROR);
        // A fragmented ping, a ping of 126 bytes.
        assert_eq!(code(&[0x09, 0x80], Role::Server), PROTOCOL_ERROR);
        assert_eq!(
            code(&[0x89, 0xFE, 0x00, 0x7E], Role::Server),
            PROTOCOL_ERROR
        );
        // A frame claiming 2^63 bytes, and one over the limit.
        let mut huge = vec![0x82, 0xFF];
        huge.extend_from_slice(&(1u64 << 63).to_be_bytes());
        assert_eq!(code(&huge, Role::Server), PROTOCOL_ERROR);
        let mut big = vec![0x82, 0xFF];
        big.extend_from_slice(&(2u64 << 20).to_be_bytes());
        assert_eq!(code(&big, Role::Server), TOO_BIG);
    }

    #[test]
    fn utf8_is_checked_across_fragments_and_fails_as_soon_as_it_cannot_be() {
        let text = "κόσμε €𝄞".as_bytes();
        // Every split in two, and byte by byte.
        for cut in 0..=text.len() {
            let mut s = Utf8Stream::default();
            assert_eq!(s.feed(&text[..cut]), Ok(()), "{cut}");
            assert_eq!(s.feed(&text[cut..]), Ok(()), "{cut}");
            assert_eq!(s.finish(), Ok(()), "{cut}");
        }
        let mut s = Utf8Stream::default();
        for b in text {
            assert_eq!(s.feed(std::slice::from_ref(b)), Ok(()));
        }
        assert_eq!(s.finish(), Ok(()));
        // A code point cut off at the end of the message.
        let mut s = Utf8Stream::default();
        assert_eq!(s.feed(&[0xF0, 0x9D]), Ok(()));
        assert_eq!(s.finish(), Err(()));
        // Bad bytes fail where they arrive, mid-message: a lead byte followed by no
        // continuation, a surrogate, a code point past U+10FFFF.
        for bad in [
            &[0xCE, 0x41][..],
            &[0xED, 0xA0, 0x80],
            &[0xF4, 0x90, 0x80, 0x80],
        ] {
            let mut s = Utf8Stream::default();
            assert_eq!(s.feed(&bad[..1]), Ok(()), "{bad:?}");
            assert_eq!(s.feed(&bad[1..]), Err(()), "{bad:?}");
        }
    }

    #[test]
    fn close_payloads_take_allowed_codes_and_utf8_reasons() {
        assert!(close_payload_ok(&[]).is_ok());
        assert!(close_payload_ok(&[0x03, 0xE8]).is_ok()); // 1000
        assert!(close_payload_ok(&[0x03, 0xE8, b'o', b'k']).is_ok());
        assert_eq!(close_payload_ok(&[0x03]).unwrap_err().code, PROTOCOL_ERROR);
        for reserved in [999u16, 1004, 1005, 1006, 1012, 1015, 2999, 5000] {
            let p = reserved.to_be_bytes();
            assert_eq!(
                close_payload_ok(&p).unwrap_err().code,
                PROTOCOL_ERROR,
                "{reserved}"
            );
        }
        assert_eq!(
            close_payload_ok(&[0x03, 0xE8, 0xFF]).unwrap_err().code,
            INVALID_DATA
        );
    }
}
