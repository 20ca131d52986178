//! The wire protocol between the nginx module (client) and shortlinkd
//! (server) on the IPC Unix socket.
//!
//! Every frame is a 4-byte big-endian payload length followed by a postcard
//! payload. The client opens with [`Request::Hello`]; the server answers
//! [`Reply::Challenge`] or [`Reply::Refused`] (then closes). The client
//! proves it holds the deployment key with [`Request::Auth`]; the server
//! answers [`Reply::Welcome`] with its own proof, or [`Reply::Refused`] (see
//! [`crate::handshake`]). After that the client may have many requests in
//! flight, each with its own request id; replies come back in any order.
//! Events ([`Reply::Event`]) are pushed to clients that sent
//! [`Request::Subscribe`].
//!
//! Enum variants are only ever appended, never reordered: postcard encodes
//! the variant index. Anything incompatible bumps [`PROTOCOL_VERSION`].
//!
//! Click spool files (clicks a worker could not deliver) are a sequence of
//! frames holding one [`ClickBatch`] each.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::choice::{choose, Choice, Variants};
use crate::country::Country;
use crate::device::DeviceClass;
use crate::handshake::{Nonce, Proof};
use crate::key::Fingerprint;
use crate::redirect::RedirectStatus;
use crate::variants::Variant;

/// Version of this protocol; the handshake refuses any other. Version 2
/// added the challenge-response ([`Request::Auth`], [`Reply::Challenge`],
/// the daemon's proof in [`Reply::Welcome`]) and [`Reply::ClicksRefused`];
/// version 3 the resync by change position ([`Request::Subscribe`]'s
/// `since`, [`Event::Position`], [`Event::Reset`]); version 4 the link's
/// `forward_query` and `created_at` in [`EdgeLink`]; version 5 the
/// visitor's country in [`ClickCount`] and the link's `country_targets` in
/// [`EdgeLink`]; version 6 password-protected links ([`EdgeLink`]'s
/// `protected`, [`Request::CheckPassword`], [`Reply::Password`]); version
/// 7 the link's A/B `variants` in [`EdgeLink`]; version 8 the variant a
/// click went to in [`ClickCount`]; version 9 [`EdgeLink`]'s
/// `password_tag` in place of `protected`, its `max_visits` and the visit
/// leases ([`Request::LeaseVisits`], [`Request::ReturnVisits`],
/// [`Reply::Visits`]).
pub const PROTOCOL_VERSION: u16 = 9;
/// Longest password the edge sends to be checked (the daemon refuses
/// longer ones at the API too).
pub const MAX_PASSWORD: usize = 1024;
/// Longest client address the edge sends with a password check.
pub const MAX_CLIENT_ADDR: usize = 64;
/// Largest payload either side accepts; bigger frames close the connection.
pub const MAX_FRAME: usize = 1 << 20;
/// Bytes of the length prefix.
pub const HEADER_LEN: usize = 4;
/// Aliases per [`Event::Aliases`] frame in a snapshot, well under `MAX_FRAME`.
pub const ALIAS_CHUNK: usize = 5_000;

/// Client to server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// First frame on a connection.
    Hello(Hello),
    /// What does this code or alias point at?
    Lookup { id: u32, code: String },
    /// Click counts to add; answered with [`Reply::ClicksAck`] once durable.
    Clicks { id: u32, batch: ClickBatch },
    /// Start pushing [`Event`]s to this connection: an alias snapshot, the
    /// changes after `since` (the last [`Event::Position`] the edge applied;
    /// `None` for an empty zone), then every change as it happens.
    Subscribe {
        id: u32,
        since: Option<ChangePosition>,
    },
    /// Liveness check.
    Ping { id: u32 },
    /// Answer to [`Reply::Challenge`]: the client's own nonce and its proof
    /// of the key over both nonces and its pid
    /// ([`crate::handshake::LinkAuth::edge_proof`]).
    Auth { nonce: Nonce, proof: Proof },
    /// A visitor of the protected link `code`, at client address `client`
    /// (nginx's `$remote_addr`; throttling counts per link and per
    /// address), gave `password`; answered with [`Reply::Password`].
    CheckPassword {
        id: u32,
        code: String,
        password: String,
        client: String,
    },
    /// Visits of the limited link `link_id` for this node's zone to spend
    /// (at least `want`, the visitors waiting, if the link has that many
    /// left); answered with [`Reply::Visits`].
    LeaseVisits { id: u32, link_id: u64, want: u32 },
    /// Visits of `link_id` leased to this node and never spent (the zone
    /// dropped them: the link changed, or their slot was needed): the
    /// daemon may lease them again. Answered with [`Reply::Visits`]
    /// granting 0.
    ReturnVisits { id: u32, link_id: u64, count: u32 },
}

/// [`Request::Lookup`] encoded from a borrowed code, byte for byte the
/// same frame: the edge sends one on every zone miss and need not copy the
/// code into a `String` for it.
pub struct LookupRequest<'a> {
    pub id: u32,
    pub code: &'a str,
}

/// [`Request::Lookup`]'s place among the variants (postcard writes it first).
const LOOKUP_VARIANT: u32 = 1;

impl Serialize for LookupRequest<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStructVariant;
        let mut v = s.serialize_struct_variant("Request", LOOKUP_VARIANT, "Lookup", 2)?;
        v.serialize_field("id", &self.id)?;
        v.serialize_field("code", self.code)?;
        v.end()
    }
}

/// The client's half of the handshake.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    pub protocol: u16,
    /// Fingerprint of the client's deployment key.
    pub fingerprint: Fingerprint,
    /// Worker process id, for the daemon's logs.
    pub pid: u32,
}

/// Server to client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Reply {
    /// Handshake accepted: the client proved it holds the key, and `proof`
    /// is the daemon's ([`crate::handshake::LinkAuth::daemon_proof`]), which
    /// the client checks before trusting anything else on the connection.
    Welcome {
        protocol: u16,
        fingerprint: Fingerprint,
        proof: Proof,
    },
    /// Handshake refused; the server closes the connection after this.
    Refused { reason: String },
    /// Answer to [`Request::Lookup`].
    Lookup { id: u32, result: LookupResult },
    /// The batch is stored (or was already): the client may forget it.
    ClicksAck { id: u32, batch_id: BatchId },
    /// Answer to [`Request::Subscribe`]; events follow.
    Subscribed { id: u32 },
    /// Answer to [`Request::Ping`].
    Pong { id: u32 },
    /// A request could not be served; the connection stays up.
    Error { id: u32, message: String },
    /// Pushed without a request.
    Event(Event),
    /// Answer to a hello the server accepts: prove you hold the key.
    Challenge { nonce: Nonce },
    /// The batch breaks the click bounds (`ClickBatch::validate`) and is
    /// not counted; sending it again can never succeed, so the client
    /// drops it. (A batch the store could not take gets [`Reply::Error`]
    /// and is retried.)
    ClicksRefused {
        id: u32,
        batch_id: BatchId,
        reason: String,
    },
    /// Answer to [`Request::CheckPassword`].
    Password { id: u32, result: PasswordResult },
    /// Answer to [`Request::LeaseVisits`] (and [`Request::ReturnVisits`]):
    /// how many visits the node may spend; 0 when the link has none left
    /// to lease (it is used up, or other nodes hold the rest).
    Visits { id: u32, granted: u32 },
}

/// Result of a password check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum PasswordResult {
    /// The password is right (or the link no longer has one): redirect,
    /// count the click, and set the edge cookie.
    Granted(Box<EdgeLink>),
    /// The password is wrong: show the form again, count nothing.
    Wrong,
    /// Too many wrong passwords for this link from this address (or for
    /// the link, or from the address): not checked; try after this many
    /// seconds.
    Throttled { retry_after: u32 },
    /// Every password check is taken; not checked, try again shortly.
    Busy,
    /// No such code or alias.
    NotFound,
    /// It existed but is deleted, expired, disabled or used up.
    Gone,
}

/// Result of a lookup.
// A found link is the common answer and is handed on by value once; boxing
// it would cost an allocation per lookup for no gain.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum LookupResult {
    /// The link and everything the edge needs to answer alone.
    Found(EdgeLink),
    /// No such code or alias.
    NotFound,
    /// It existed but is deleted, expired, disabled or used up.
    Gone,
}

/// What the edge caches for a link.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct EdgeLink {
    pub id: u64,
    pub target: String,
    /// The link's own redirect status; `None` uses the location's
    /// `shortlink_redirect`.
    pub status: Option<RedirectStatus>,
    /// Unix seconds after which the link is gone.
    pub expires_at: Option<i64>,
    pub targets: DeviceTargets,
    pub disabled: bool,
    /// The link's own choice to append the visit's query string to the
    /// target; `None` leaves it to `shortlink_forward_query`
    /// ([`crate::query::forwards_query`]).
    pub forward_query: Option<bool>,
    /// Unix seconds when the link was made, for its preview page.
    pub created_at: i64,
    /// Targets per visitor country (at most
    /// [`crate::country::MAX_COUNTRY_TARGETS`]), chosen before the device targets.
    pub country_targets: Vec<(Country, String)>,
    /// Set when visitors must give a password (checked by the daemon with
    /// [`Request::CheckPassword`], then remembered in a signed cookie,
    /// [`crate::edge_cookie`], carrying this tag and the link's id): the
    /// tag of the password's hash ([`crate::password_page::password_tag`]);
    /// the hash itself never leaves the daemon.
    pub password_tag: Option<u32>,
    /// A/B variants (at most [`crate::variants::MAX_VARIANTS`]), which
    /// replace `target`; country and device targets win
    /// ([`crate::choice`]).
    pub variants: Vec<Variant>,
    /// The link's visit limit: each redirect of a person spends one visit
    /// the edge leased from the daemon ([`Request::LeaseVisits`]), so no
    /// node, nor all of them together, redirects more than this.
    pub max_visits: Option<u64>,
}

impl EdgeLink {
    /// The target for a visitor: the country's target, else the most
    /// specific device target the link has, else the main target
    /// ([`crate::choice::choose`]).
    pub fn target_for(&self, country: Country, device: DeviceClass) -> &str {
        let codes = self.country_targets.iter().map(|(c, _)| *c);
        let has = |c| self.targets.get(c).is_some();
        match choose(codes, || country, device, has, Variants::none()) {
            Choice::Country(i) => &self.country_targets[i].1,
            Choice::Device(class) => self.targets.get(class).unwrap_or(&self.target),
            Choice::Variant(_) | Choice::Kept(_) => &self.target,
        }
    }
}

/// Device-specific targets; each falls back to the next wider class.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DeviceTargets {
    pub desktop: Option<String>,
    pub mobile: Option<String>,
    pub ios: Option<String>,
    pub android: Option<String>,
}

impl DeviceTargets {
    /// The target set for exactly `class` (`Other` has none of its own); an
    /// empty one counts as unset, as it does in the nginx zone.
    pub fn get(&self, class: DeviceClass) -> Option<&str> {
        let target = match class {
            DeviceClass::Desktop => self.desktop.as_deref(),
            DeviceClass::Mobile => self.mobile.as_deref(),
            DeviceClass::Ios => self.ios.as_deref(),
            DeviceClass::Android => self.android.as_deref(),
            DeviceClass::Other => None,
        };
        target.filter(|t| !t.is_empty())
    }

    /// True when no device-specific target is set.
    pub fn is_empty(&self) -> bool {
        self.desktop.is_none()
            && self.mobile.is_none()
            && self.ios.is_none()
            && self.android.is_none()
    }
}

/// Globally unique batch id (worker pid, start time and sequence number), so
/// a batch re-sent after a reconnect or from a spool file counts once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct BatchId(pub [u8; 16]);

impl BatchId {
    /// Hex form for logs and storage.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// Clicks counted by one worker since its last batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClickBatch {
    pub batch_id: BatchId,
    pub clicks: Vec<ClickCount>,
}

/// Clicks of one link in one hour from one kind of visitor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClickCount {
    pub link_id: u64,
    /// Hours since the Unix epoch.
    pub hour: u32,
    pub device: DeviceClass,
    pub bot: bool,
    /// Lower-case referrer host, if the request had one.
    pub referrer: Option<String>,
    pub count: u32,
    /// The visitor's country (`shortlink_country`), `--` when unknown.
    pub country: Country,
    /// The A/B variant the visitor was sent to: 0 for none (the link has
    /// no variants, or a country or device target won), `i + 1` for
    /// variant `i` of the link's list (at most
    /// [`crate::variants::MAX_VARIANTS`]).
    pub variant: u8,
}

impl ClickCount {
    /// The index of the variant counted, `None` for none.
    pub fn variant_index(&self) -> Option<u8> {
        self.variant.checked_sub(1)
    }
}

/// Pushed to subscribers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Event {
    /// The link behind this code or alias changed or is gone: drop it.
    Invalidate { code: String },
    /// A full alias snapshot follows in [`Event::Aliases`] frames.
    AliasSnapshotBegin { total: u64 },
    /// A chunk of aliases: part of a snapshot, or additions after it.
    Aliases { aliases: Vec<String> },
    /// The snapshot is complete.
    AliasSnapshotEnd,
    /// These aliases no longer exist.
    AliasesRemoved { aliases: Vec<String> },
    /// Every change up to this position is in the events before this one:
    /// the edge keeps it and resumes from it after an outage.
    Position(ChangePosition),
    /// The daemon cannot replay the changes after the edge's position (an
    /// empty or another database, or changes pruned from its log): drop
    /// every cached link.
    Reset,
}

/// A place in the daemon's change log: which database, and the last change
/// of it applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangePosition {
    /// Random id of the database, made when it was created.
    pub store: u64,
    /// Sequence number of the change.
    pub seq: u64,
}

/// Why a frame could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("frame of {len} bytes exceeds the limit of {MAX_FRAME}")]
    TooLarge { len: usize },
    #[error("malformed frame: {0}")]
    Malformed(String),
}

/// Appends one frame holding `msg` to `out`.
pub fn write_frame<T: Serialize>(msg: &T, out: &mut Vec<u8>) -> Result<(), FrameError> {
    let start = out.len();
    out.extend_from_slice(&[0; HEADER_LEN]);
    let taken = std::mem::take(out);
    let mut buf =
        postcard::to_extend(msg, taken).map_err(|e| FrameError::Malformed(e.to_string()))?;
    let len = buf.len() - start - HEADER_LEN;
    if len > MAX_FRAME {
        buf.truncate(start);
        *out = buf;
        return Err(FrameError::TooLarge { len });
    }
    buf[start..start + HEADER_LEN].copy_from_slice(&(len as u32).to_be_bytes());
    *out = buf;
    Ok(())
}

/// One frame holding `msg`, as a new buffer.
pub fn frame<T: Serialize>(msg: &T) -> Result<Vec<u8>, FrameError> {
    let mut out = Vec::new();
    write_frame(msg, &mut out)?;
    Ok(out)
}

/// Payload length announced by a frame header, checked against the limit;
/// `None` while fewer than [`HEADER_LEN`] bytes are buffered.
pub fn frame_len(buf: &[u8]) -> Result<Option<usize>, FrameError> {
    if buf.len() < HEADER_LEN {
        return Ok(None);
    }
    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    if len > MAX_FRAME {
        return Err(FrameError::TooLarge { len });
    }
    Ok(Some(len))
}

/// Reads the first complete frame in `buf`: the message and the bytes it
/// used, or `None` when more bytes are needed.
pub fn read_frame<T: DeserializeOwned>(buf: &[u8]) -> Result<Option<(T, usize)>, FrameError> {
    let Some(len) = frame_len(buf)? else {
        return Ok(None);
    };
    if buf.len() < HEADER_LEN + len {
        return Ok(None);
    }
    let msg = decode_payload(&buf[HEADER_LEN..HEADER_LEN + len])?;
    Ok(Some((msg, HEADER_LEN + len)))
}

/// Decodes a payload whose length prefix was already taken off.
pub fn decode_payload<T: DeserializeOwned>(payload: &[u8]) -> Result<T, FrameError> {
    let (msg, rest) =
        postcard::take_from_bytes(payload).map_err(|e| FrameError::Malformed(e.to_string()))?;
    if !rest.is_empty() {
        return Err(FrameError::Malformed(format!(
            "{} trailing bytes after the message",
            rest.len()
        )));
    }
    Ok(msg)
}

impl Hello {
    /// The server's check of a client hello: `Err` carries the reason both
    /// sides log.
    pub fn accept(&self, ours: Fingerprint) -> Result<(), String> {
        if self.protocol != PROTOCOL_VERSION {
            return Err(format!(
                "protocol version mismatch: client speaks {}, daemon speaks {}",
                self.protocol, PROTOCOL_VERSION
            ));
        }
        if self.fingerprint != ours {
            return Err(format!(
                "key fingerprint mismatch: client has {}, daemon has {} (point both at the same key file)",
                self.fingerprint, ours
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::country;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn a_borrowed_lookup_is_the_same_frame_as_a_request(id in any::<u32>(), code in "[0-9A-Za-z_-]{0,70}") {
            let borrowed = frame(&LookupRequest { id, code: &code }).unwrap();
            let owned = Request::Lookup { id, code: code.clone() };
            prop_assert_eq!(&borrowed, &frame(&owned).unwrap());
            let (decoded, used) = read_frame::<Request>(&borrowed).unwrap().unwrap();
            prop_assert_eq!(used, borrowed.len());
            prop_assert_eq!(decoded, owned);
        }
    }

    fn sample_batch() -> ClickBatch {
        ClickBatch {
            batch_id: BatchId([7; 16]),
            clicks: vec![ClickCount {
                link_id: 42,
                hour: 500_000,
                device: DeviceClass::Ios,
                bot: false,
                referrer: Some("news.example.com".into()),
                count: 3,
                country: Country::parse("NL").unwrap(),
                variant: 2,
            }],
        }
    }

    #[test]
    fn frames_round_trip_back_to_back() {
        let msgs = vec![
            Request::Hello(Hello {
                protocol: PROTOCOL_VERSION,
                fingerprint: Fingerprint([1; 8]),
                pid: 1234,
            }),
            Request::Lookup {
                id: 1,
                code: "aZ3kQ9x".into(),
            },
            Request::Clicks {
                id: 2,
                batch: sample_batch(),
            },
        ];
        let mut buf = Vec::new();
        for m in &msgs {
            write_frame(m, &mut buf).unwrap();
        }
        let mut at = 0;
        let mut got = Vec::new();
        while let Some((m, used)) = read_frame::<Request>(&buf[at..]).unwrap() {
            got.push(m);
            at += used;
        }
        assert_eq!(got, msgs);
        assert_eq!(at, buf.len());
    }

    #[test]
    fn variants_keep_their_wire_index() {
        // postcard writes the variant index first: appended variants never
        // move the old ones.
        let index = |bytes: Vec<u8>| bytes[HEADER_LEN];
        let reqs = [
            (Request::Ping { id: 1 }, 4),
            (
                Request::Auth {
                    nonce: [1; 16],
                    proof: [2; 32],
                },
                5,
            ),
            (
                Request::CheckPassword {
                    id: 3,
                    code: "pw".into(),
                    password: "open sesame".into(),
                    client: "127.0.0.1".into(),
                },
                6,
            ),
            (
                Request::LeaseVisits {
                    id: 4,
                    link_id: 9,
                    want: 3,
                },
                7,
            ),
            (
                Request::ReturnVisits {
                    id: 5,
                    link_id: 9,
                    count: 2,
                },
                8,
            ),
        ];
        for (req, i) in reqs {
            assert_eq!(index(frame(&req).unwrap()), i, "{req:?}");
            assert_eq!(
                read_frame::<Request>(&frame(&req).unwrap())
                    .unwrap()
                    .unwrap()
                    .0,
                req
            );
        }
        let replies = [
            (
                Reply::Refused {
                    reason: String::new(),
                },
                1,
            ),
            (Reply::Event(Event::AliasSnapshotEnd), 7),
            (Reply::Challenge { nonce: [3; 16] }, 8),
            (
                Reply::ClicksRefused {
                    id: 1,
                    batch_id: BatchId([4; 16]),
                    reason: "count".into(),
                },
                9,
            ),
            (
                Reply::Password {
                    id: 2,
                    result: PasswordResult::Throttled { retry_after: 30 },
                },
                10,
            ),
            (Reply::Visits { id: 4, granted: 3 }, 11),
        ];
        for (reply, i) in replies {
            assert_eq!(index(frame(&reply).unwrap()), i, "{reply:?}");
            assert_eq!(
                read_frame::<Reply>(&frame(&reply).unwrap())
                    .unwrap()
                    .unwrap()
                    .0,
                reply
            );
        }
    }

    #[test]
    fn partial_frames_wait_for_more() {
        let buf = frame(&Reply::Pong { id: 9 }).unwrap();
        for cut in 0..buf.len() {
            assert_eq!(read_frame::<Reply>(&buf[..cut]).unwrap(), None);
        }
        assert_eq!(
            read_frame::<Reply>(&buf).unwrap(),
            Some((Reply::Pong { id: 9 }, buf.len()))
        );
    }

    #[test]
    fn oversized_and_malformed_frames_are_errors() {
        let huge = ((MAX_FRAME + 1) as u32).to_be_bytes();
        assert_eq!(
            read_frame::<Reply>(&huge),
            Err(FrameError::TooLarge { len: MAX_FRAME + 1 })
        );
        let junk = [0, 0, 0, 2, 0xff, 0xff];
        assert!(matches!(
            read_frame::<Reply>(&junk),
            Err(FrameError::Malformed(_))
        ));
        let mut trailing = frame(&Reply::Pong { id: 1 }).unwrap();
        trailing[3] += 1;
        trailing.push(0);
        assert!(matches!(
            read_frame::<Reply>(&trailing),
            Err(FrameError::Malformed(_))
        ));
    }

    #[test]
    fn writing_an_oversized_message_leaves_the_buffer_as_it_was() {
        let mut out = frame(&Reply::Pong { id: 1 }).unwrap();
        let before = out.clone();
        let big = Event::Aliases {
            aliases: vec!["x".repeat(1000); 2000],
        };
        assert!(matches!(
            write_frame(&big, &mut out),
            Err(FrameError::TooLarge { .. })
        ));
        assert_eq!(out, before);
    }

    #[test]
    fn hello_names_the_mismatch() {
        let hello = Hello {
            protocol: PROTOCOL_VERSION,
            fingerprint: Fingerprint([1; 8]),
            pid: 1,
        };
        assert!(hello.accept(Fingerprint([1; 8])).is_ok());
        let err = hello.accept(Fingerprint([2; 8])).unwrap_err();
        assert!(
            err.contains("0101010101010101") && err.contains("0202020202020202"),
            "{err}"
        );
        let old = Hello {
            protocol: 0,
            ..hello
        };
        assert!(old
            .accept(Fingerprint([1; 8]))
            .unwrap_err()
            .contains("protocol version"));
    }

    #[test]
    fn device_targets_fall_back() {
        let link = EdgeLink {
            target: "https://example.com/".into(),
            targets: DeviceTargets {
                mobile: Some("https://m.example.com/".into()),
                ios: Some("https://apps.apple.com/x".into()),
                ..DeviceTargets::default()
            },
            ..EdgeLink::default()
        };
        assert_eq!(
            link.target_for(country::UNKNOWN, DeviceClass::Ios),
            "https://apps.apple.com/x"
        );
        assert_eq!(
            link.target_for(country::UNKNOWN, DeviceClass::Android),
            "https://m.example.com/"
        );
        assert_eq!(
            link.target_for(country::UNKNOWN, DeviceClass::Desktop),
            "https://example.com/"
        );
        assert_eq!(
            link.target_for(country::UNKNOWN, DeviceClass::Other),
            "https://example.com/"
        );
        let empty_ios = EdgeLink {
            targets: DeviceTargets {
                ios: Some(String::new()),
                ..link.targets.clone()
            },
            ..link.clone()
        };
        assert_eq!(
            empty_ios.target_for(country::UNKNOWN, DeviceClass::Ios),
            "https://m.example.com/",
            "an empty target counts as unset"
        );
    }

    #[test]
    fn the_country_target_comes_before_the_device_target() {
        let (de, fr) = (Country::parse("DE").unwrap(), Country::parse("FR").unwrap());
        let link = EdgeLink {
            target: "https://example.com/".into(),
            targets: DeviceTargets {
                ios: Some("https://apps.apple.com/x".into()),
                ..DeviceTargets::default()
            },
            country_targets: vec![(de, "https://example.de/".into())],
            ..EdgeLink::default()
        };
        assert_eq!(link.target_for(de, DeviceClass::Ios), "https://example.de/");
        assert_eq!(
            link.target_for(fr, DeviceClass::Ios),
            "https://apps.apple.com/x"
        );
        assert_eq!(
            link.target_for(fr, DeviceClass::Desktop),
            "https://example.com/"
        );
        assert_eq!(
            link.target_for(country::UNKNOWN, DeviceClass::Desktop),
            "https://example.com/"
        );
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = read_frame::<Request>(&bytes);
            let _ = read_frame::<Reply>(&bytes);
        }
    }
}
