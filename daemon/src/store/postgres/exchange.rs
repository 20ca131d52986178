//! Which requests on a PostgreSQL session are still unanswered, read off
//! the bytes of the wire protocol (version 3) as they pass.
//!
//! Every request the driver makes ends with a message the server answers
//! with `ReadyForQuery` (`Z`): a simple `Query` (`Q`), a `Sync` (`S`) after
//! an extended-protocol batch, and the start-up message (answered with the
//! first `Z` after authentication). So a session owes answers while more of
//! those were written than `Z`s were read. Counting messages, not bytes,
//! holds when the driver writes its next request before the previous
//! answer's last message arrived (it does: a statement's description comes
//! before its `Z`).
//!
//! Over TLS the bytes here are ciphertext: the tracker learns of it from
//! the server's `S` to the `SSLRequest` and stops counting ([`Exchange::
//! counting`] turns false); the caller falls back to a rougher rule.

/// The code of `SSLRequest` (untyped, in place of a protocol version).
const SSL_REQUEST: u32 = 80_877_103;

/// Where a direction's parser is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Reading a message's header: `len` bytes of it so far.
    Header,
    /// Skipping the rest of a message's body.
    Body(usize),
}

/// One direction's framing: untyped messages (length first) until the
/// start-up, typed ones (type byte, then length) after.
#[derive(Debug, Clone)]
struct Framing {
    typed: bool,
    header: [u8; 8],
    filled: usize,
    at: At,
}

impl Framing {
    fn new(typed: bool) -> Self {
        Self {
            typed,
            header: [0; 8],
            filled: 0,
            at: At::Header,
        }
    }

    /// Bytes of header before the body: `Q` + length (5), or length +
    /// code for an untyped message (8).
    fn header_len(&self) -> usize {
        if self.typed {
            5
        } else {
            8
        }
    }

    /// Feeds `data`; calls `done` with each complete header (type byte or
    /// 0 for untyped, and for an untyped one its code).
    fn feed(&mut self, mut data: &[u8], mut done: impl FnMut(&mut Self, u8, u32)) {
        while !data.is_empty() {
            match self.at {
                At::Body(left) => {
                    let n = left.min(data.len());
                    data = &data[n..];
                    self.at = if left == n {
                        At::Header
                    } else {
                        At::Body(left - n)
                    };
                }
                At::Header => {
                    let want = self.header_len() - self.filled;
                    let n = want.min(data.len());
                    self.header[self.filled..self.filled + n].copy_from_slice(&data[..n]);
                    self.filled += n;
                    data = &data[n..];
                    if self.filled < self.header_len() {
                        continue;
                    }
                    self.filled = 0;
                    let (kind, len, code) = if self.typed {
                        let len =
                            u32::from_be_bytes(self.header[1..5].try_into().unwrap_or([0; 4]));
                        (self.header[0], len as usize, 0)
                    } else {
                        let len =
                            u32::from_be_bytes(self.header[0..4].try_into().unwrap_or([0; 4]));
                        let code =
                            u32::from_be_bytes(self.header[4..8].try_into().unwrap_or([0; 4]));
                        (0, len as usize, code)
                    };
                    // The length counts itself (and, untyped, the code).
                    let body = len.saturating_sub(self.header_len() - usize::from(self.typed));
                    self.at = if body == 0 {
                        At::Header
                    } else {
                        At::Body(body)
                    };
                    done(self, kind, code);
                }
            }
        }
    }
}

/// The requests a session owes answers to.
#[derive(Debug, Clone)]
pub struct Exchange {
    sent: Framing,
    received: Framing,
    /// The server's one-byte answer to `SSLRequest` is due.
    ssl_answer_due: bool,
    counting: bool,
    asked: u64,
    answered: u64,
}

impl Default for Exchange {
    fn default() -> Self {
        Self {
            sent: Framing::new(false),
            received: Framing::new(true),
            ssl_answer_due: false,
            counting: true,
            asked: 0,
            answered: 0,
        }
    }
}

impl Exchange {
    /// Whether the count is known (false over TLS).
    pub fn counting(&self) -> bool {
        self.counting
    }

    /// Whether a request is unanswered.
    pub fn owed(&self) -> bool {
        self.asked > self.answered
    }

    /// Bytes the driver wrote.
    pub fn wrote(&mut self, data: &[u8]) {
        if !self.counting {
            return;
        }
        let mut asked = 0;
        let mut ssl = false;
        self.sent.feed(data, |f, kind, code| {
            if f.typed {
                if matches!(kind, b'Q' | b'S') {
                    asked += 1;
                }
            } else if code == SSL_REQUEST {
                // Answered by one untyped byte.
                ssl = true;
                asked += 1;
            } else {
                // The start-up message: typed messages follow, and the
                // first ReadyForQuery answers it.
                f.typed = true;
                asked += 1;
            }
        });
        self.asked += asked;
        self.ssl_answer_due |= ssl;
    }

    /// Bytes the server sent.
    pub fn read(&mut self, mut data: &[u8]) {
        if !self.counting {
            return;
        }
        if self.ssl_answer_due {
            let Some((&answer, rest)) = data.split_first() else {
                return;
            };
            self.ssl_answer_due = false;
            self.answered += 1;
            if answer == b'S' {
                // TLS from here on: nothing more can be read off.
                self.counting = false;
                return;
            }
            data = rest;
        }
        let mut answered = 0;
        self.received.feed(data, |_, kind, _| {
            if kind == b'Z' {
                answered += 1;
            }
        });
        self.answered += answered;
    }
}

/// Messages as the driver and the server write them, for tests.
#[cfg(test)]
pub(crate) mod wire {
    /// A typed message.
    pub fn typed(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    /// A start-up message.
    pub fn startup() -> Vec<u8> {
        let body = b"user\0shortlink\0\0";
        let mut m = (body.len() as u32 + 8).to_be_bytes().to_vec();
        m.extend_from_slice(&196_608u32.to_be_bytes());
        m.extend_from_slice(body);
        m
    }
}

#[cfg(test)]
mod tests {
    use super::wire::{startup, typed};
    use super::*;

    #[test]
    fn a_request_is_owed_until_its_ready_for_query_even_when_the_next_is_written_first() {
        let mut x = Exchange::default();
        x.wrote(&startup());
        assert!(x.owed());
        x.read(&typed(b'R', &[0, 0, 0, 0]));
        assert!(x.owed(), "authentication is not the answer");
        x.read(&[typed(b'S', b"a\0b\0"), typed(b'Z', b"I")].concat());
        assert!(!x.owed());
        // Prepare: Parse, Describe, Sync; the description arrives, then
        // the next request is written before the Z.
        x.wrote(
            &[
                typed(b'P', b"\0select 1\0\0\0"),
                typed(b'D', b"S\0"),
                typed(b'S', b""),
            ]
            .concat(),
        );
        x.read(&[typed(b'1', b""), typed(b't', &[0, 0]), typed(b'n', b"")].concat());
        x.wrote(&[typed(b'B', &[0; 8]), typed(b'E', &[0; 5]), typed(b'S', b"")].concat());
        x.read(&typed(b'Z', b"I"));
        assert!(x.owed(), "the execute is still unanswered");
        x.read(&[typed(b'2', b""), typed(b'C', b"SELECT 1\0")].concat());
        assert!(x.owed());
        x.read(&typed(b'Z', b"I"));
        assert!(!x.owed());
    }

    #[test]
    fn messages_split_anywhere_are_counted_once() {
        let mut x = Exchange::default();
        let out = [startup(), typed(b'Q', b"LISTEN x\0")].concat();
        for chunk in out.chunks(3) {
            x.wrote(chunk);
        }
        let back = [
            typed(b'R', &[0, 0, 0, 0]),
            typed(b'Z', b"I"),
            typed(b'C', b"LISTEN\0"),
            typed(b'Z', b"I"),
            // A notification later answers nothing.
            typed(b'A', &[0, 0, 0, 1, b'x', 0, 0]),
        ]
        .concat();
        // R (9 bytes), Z (6), C (12), then the second Z's header (5).
        let answered_at = 9 + 6 + 12 + 5;
        for (i, chunk) in back.chunks(2).enumerate() {
            x.read(chunk);
            let fed = (2 * (i + 1)).min(back.len());
            assert_eq!(x.owed(), fed < answered_at, "after {fed} bytes");
        }
        assert!(!x.owed());
    }

    #[test]
    fn an_accepted_ssl_request_stops_the_count_and_a_refused_one_does_not() {
        let ssl = [8u32.to_be_bytes(), SSL_REQUEST.to_be_bytes()].concat();
        let mut tls = Exchange::default();
        tls.wrote(&ssl);
        assert!(tls.owed(), "the server's byte is due");
        tls.read(b"S");
        assert!(!tls.counting());
        let mut plain = Exchange::default();
        plain.wrote(&ssl);
        assert!(plain.owed());
        plain.read(b"N");
        assert!(plain.counting());
        assert!(!plain.owed());
        plain.wrote(&startup());
        assert!(plain.owed());
        plain.read(&typed(b'Z', b"I"));
        assert!(!plain.owed());
    }
}
