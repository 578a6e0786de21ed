//! raw's WebSocket echo, the reference under `--protocol ws`: `GET /ws` with a valid upgrade
//! gets its `101` ([`crate::protocol::ws::handshake`]), and from then on the connection's bytes
//! are client frames, unmasked in place in the read buffer and echoed into the answer buffer,
//! frame for frame (a fragmented message comes back fragmented the same way, which is a valid
//! echo), with no allocation per message. It checks what a server must (masking, reserved bits
//! and opcodes, control frames, fragmentation order, UTF-8 of text across fragments as it
//! arrives, close codes) and answers a violation with a Close frame of its code, then closes.
//! A Ping gets its Pong; a Close gets a Close with the same code, then the connection ends.
//!
//! What it leaves out: no extension (`permessage-deflate` is never negotiated), no
//! subprotocol, and no limit on a message as a whole beyond [`MAX_FRAME`] per frame.

use crate::protocol::ws::frame::{self, Opcode, Role, Utf8Stream, Violation};
use crate::server::limit::Limit;

/// The largest frame raw takes, which its read buffer grows to hold: Autobahn's largest
/// message, 16 MiB in one frame (its 9.x cases).
pub(super) const MAX_FRAME: usize = 16 << 20;

/// The state of an upgraded connection: the fragmented message it is inside, if any.
#[derive(Default)]
pub(super) struct Echo {
    /// The opcode of the message whose continuation frames come next.
    message: Option<Opcode>,
    /// UTF-8 across the frames of a text message.
    text: Utf8Stream,
    /// `serve --max-requests`: counts each message echoed whole.
    limit: Option<&'static Limit>,
}

/// What [`Echo::frames`] did with a buffer.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Echoed {
    /// Echoed every complete frame, which took this many bytes; the rest waits for more.
    More(usize),
    /// A Close went into the answers (an answer to the client's, or for a violation): write
    /// them, then close the connection.
    Close,
}

impl Echo {
    /// A new upgraded connection, counting its messages into `limit` when one is set.
    pub(super) fn new(limit: Option<&'static Limit>) -> Echo {
        Echo {
            limit,
            ..Echo::default()
        }
    }

    /// Echoes every complete frame at the start of `buf` into `out`.
    pub(super) fn frames(&mut self, buf: &mut [u8], out: &mut Vec<u8>) -> Echoed {
        let mut at = 0;
        loop {
            let head = match frame::parse_head(&buf[at..], Role::Server, MAX_FRAME) {
                Ok(Some(head)) => head,
                Ok(None) => return Echoed::More(at),
                Err(v) => return fail(out, v),
            };
            if buf.len() - at < head.frame_len() {
                return Echoed::More(at);
            }
            let payload = &mut buf[at + head.head_len..at + head.frame_len()];
            if let Some(key) = head.mask {
                frame::apply_mask(payload, key, 0);
            }
            if let Err(v) = self.take(head.fin, head.opcode, payload, out) {
                return fail(out, v);
            }
            if head.opcode == Opcode::Close {
                return Echoed::Close;
            }
            at += head.frame_len();
        }
    }

    /// One frame, unmasked: its echo (or Pong, or Close) into `out`.
    fn take(
        &mut self,
        fin: bool,
        opcode: Opcode,
        payload: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), Violation> {
        const NEW_INSIDE: Violation = Violation {
            code: frame::PROTOCOL_ERROR,
            why: "a new message inside a fragmented one",
        };
        const STRAY: Violation = Violation {
            code: frame::PROTOCOL_ERROR,
            why: "a continuation outside a fragmented message",
        };
        const NOT_UTF8: Violation = Violation {
            code: frame::INVALID_DATA,
            why: "a text message that is not UTF-8",
        };
        match opcode {
            Opcode::Text | Opcode::Binary | Opcode::Continuation => {
                let kind = match (opcode, self.message) {
                    (Opcode::Continuation, Some(kind)) => kind,
                    (Opcode::Continuation, None) => return Err(STRAY),
                    (_, Some(_)) => return Err(NEW_INSIDE),
                    (kind, None) => kind,
                };
                if kind == Opcode::Text {
                    self.text.feed(payload).map_err(|()| NOT_UTF8)?;
                    if fin {
                        self.text.finish().map_err(|()| NOT_UTF8)?;
                    }
                }
                self.message = (!fin).then_some(kind);
                frame::put_frame(out, fin, opcode, payload, None);
                if let (true, Some(limit)) = (fin, self.limit) {
                    limit.record_message();
                }
            }
            Opcode::Ping => frame::put_frame(out, true, Opcode::Pong, payload, None),
            Opcode::Pong => {}
            Opcode::Close => {
                frame::close_payload_ok(payload)?;
                // The same code back (none for none); the reason is not repeated.
                frame::put_frame(out, true, Opcode::Close, &payload[..payload.len().min(2)], None);
            }
        }
        Ok(())
    }
}

/// A Close of `v`'s code into `out`: the connection ends once it is written.
fn fail(out: &mut Vec<u8>, v: Violation) -> Echoed {
    frame::put_frame(out, true, Opcode::Close, &v.code.to_be_bytes(), None);
    Echoed::Close
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: [u8; 4] = [1, 2, 3, 4];

    fn client(frames: &[(bool, Opcode, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for &(fin, opcode, payload) in frames {
            frame::put_frame(&mut out, fin, opcode, payload, Some(KEY));
        }
        out
    }

    fn server(frames: &[(bool, Opcode, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for &(fin, opcode, payload) in frames {
            frame::put_frame(&mut out, fin, opcode, payload, None);
        }
        out
    }

    #[test]
    fn messages_come_back_as_sent_and_a_ping_gets_its_pong() {
        let sent = [
            (true, Opcode::Text, "hello".as_bytes()),
            (true, Opcode::Binary, &[0u8, 255, 7][..]),
            (false, Opcode::Text, "κό".as_bytes()),
            (true, Opcode::Ping, b"p"),
            (true, Opcode::Continuation, "σμε".as_bytes()),
        ];
        let mut buf = client(&sent);
        let whole = buf.len();
        // Less than a frame: nothing taken.
        let (mut echo, mut out) = (Echo::default(), Vec::new());
        assert_eq!(echo.frames(&mut buf[..3], &mut out), Echoed::More(0));
        assert!(out.is_empty());
        assert_eq!(echo.frames(&mut buf, &mut out), Echoed::More(whole));
        let want = server(&[
            (true, Opcode::Text, "hello".as_bytes()),
            (true, Opcode::Binary, &[0u8, 255, 7][..]),
            (false, Opcode::Text, "κό".as_bytes()),
            (true, Opcode::Pong, b"p"),
            (true, Opcode::Continuation, "σμε".as_bytes()),
        ]);
        assert_eq!(out, want);
    }

    #[test]
    fn a_close_is_answered_with_its_code_and_violations_with_theirs() {
        let close = |frames: &[(bool, Opcode, &[u8])]| {
            let (mut echo, mut out) = (Echo::default(), Vec::new());
            assert_eq!(echo.frames(&mut client(frames), &mut out), Echoed::Close);
            // The last frame out (echoes of earlier fragments may come before it).
            let mut at = 0;
            let head = loop {
                let head = frame::parse_head(&out[at..], Role::Client, 125).unwrap().unwrap();
                if at + head.frame_len() == out.len() {
                    break head;
                }
                at += head.frame_len();
            };
            assert_eq!(head.opcode, Opcode::Close);
            let tail = &out[out.len() - head.len..];
            (tail.len() >= 2).then(|| u16::from_be_bytes([tail[0], tail[1]]))
        };
        assert_eq!(close(&[(true, Opcode::Close, &1000u16.to_be_bytes())]), Some(1000));
        assert_eq!(close(&[(true, Opcode::Close, &[])]), None);
        assert_eq!(close(&[(true, Opcode::Close, &1005u16.to_be_bytes())]), Some(1002));
        assert_eq!(close(&[(true, Opcode::Text, &[0xFF])]), Some(1007));
        assert_eq!(close(&[(true, Opcode::Continuation, b"x")]), Some(1002));
        assert_eq!(
            close(&[(false, Opcode::Text, b"a"), (true, Opcode::Binary, b"b")]),
            Some(1002)
        );
        // UTF-8 cut off at the end of a message.
        assert_eq!(
            close(&[(false, Opcode::Text, &[0xCE]), (true, Opcode::Continuation, b"")]),
            Some(1007)
        );
        // Split across fragments, it is fine.
        let mut split = client(&[
            (false, Opcode::Text, &[0xCE]),
            (true, Opcode::Continuation, &[0xBA]),
        ]);
        let (mut echo, mut out) = (Echo::default(), Vec::new());
        let whole = split.len();
        assert_eq!(echo.frames(&mut split, &mut out), Echoed::More(whole));
    }

    #[test]
    fn an_unmasked_frame_is_a_protocol_error() {
        let (mut echo, mut out) = (Echo::default(), Vec::new());
        let mut unmasked = server(&[(true, Opcode::Text, b"hi")]);
        assert_eq!(echo.frames(&mut unmasked, &mut out), Echoed::Close);
        assert_eq!(&out[out.len() - 2..], &1002u16.to_be_bytes());
    }
}
