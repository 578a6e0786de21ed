//! WebSocket (RFC 6455) as framebench speaks it: the opening handshake ([`handshake`]) and the
//! frames ([`frame`]), both ends of each, written for the load driver's client and raw's
//! reference echo. The echo scenario (`--protocol ws`) is built on them.

pub(crate) mod client;
pub(crate) mod frame;
pub(crate) mod handshake;

use crate::oracle::{Instance, Observed};

use frame::{Opcode, Role};

/// The masking key of the load client's frames. RFC 6455 asks a client for unpredictable keys,
/// against proxies that cache; no server can tell, and a fixed one keeps every message of the
/// ring encoded once and the counts repeatable.
const LOAD_MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

/// The largest echo the load client reads: the largest message a reference server takes.
const MAX_ECHO: usize = 16 << 20;

/// Appends `instance`'s message as one masked text frame, and when it is a churning
/// connection's `last`, a Close (1000) after it.
pub(crate) fn encode_message(instance: &Instance, last: bool, out: &mut Vec<u8>) {
    frame::put_frame(out, true, Opcode::Text, &instance.body, Some(LOAD_MASK));
    if last {
        frame::put_frame(
            out,
            true,
            Opcode::Close,
            &1000u16.to_be_bytes(),
            Some(LOAD_MASK),
        );
    }
}

/// The load client's framing of a server's frames: a whole data frame answers the oldest
/// message in flight; a pong or a Close answers none. A fragmented echo is refused: the
/// client reads each echo as one frame, as every server here sends a short message.
pub(crate) fn frame_answer(data: &[u8]) -> anyhow::Result<super::Framed> {
    use super::Framed;
    let head = match frame::parse_head(data, Role::Client, MAX_ECHO) {
        Ok(Some(head)) => head,
        Ok(None) => return Ok(Framed::Partial),
        Err(v) => anyhow::bail!("the server's frame: {v}"),
    };
    if data.len() < head.frame_len() {
        return Ok(Framed::Partial);
    }
    let len = head.frame_len();
    Ok(match head.opcode {
        Opcode::Text | Opcode::Binary if head.fin => Framed::Answer { status: 200, len },
        Opcode::Text | Opcode::Binary | Opcode::Continuation => {
            anyhow::bail!("a fragmented echo (the load client reads each echo as one frame)")
        }
        Opcode::Pong => Framed::Control { len, close: false },
        Opcode::Close => Framed::Control { len, close: true },
        Opcode::Ping => anyhow::bail!("a ping from the server during a load"),
    })
}

/// One echo frame, as the load client sampled it: the oracle's view of it (the upgrade's 101,
/// and the message).
pub(crate) fn observed(answer: &[u8]) -> anyhow::Result<Observed> {
    let head = frame::parse_head(answer, Role::Client, MAX_ECHO)
        .map_err(|v| anyhow::anyhow!("the server's frame: {v}"))?
        .ok_or_else(|| anyhow::anyhow!("incomplete frame"))?;
    let payload = answer
        .get(head.head_len..head.frame_len())
        .ok_or_else(|| anyhow::anyhow!("incomplete frame"))?;
    Ok(Observed {
        status: 101,
        content_type: None,
        body: bytes::Bytes::copy_from_slice(payload),
    })
}
