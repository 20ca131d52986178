//! Click spool files: batches a worker could not deliver, imported by the
//! daemon.
//!
//! A file is [`MAGIC`], then IPC frames of one [`ClickBatch`] each, then an
//! HMAC-SHA256 of everything before it under a subkey of the deployment key.
//! Any local user who can write to the spool directory (in the demo, any
//! `nobody` process) could drop a file there; only a holder of the key can
//! make one that counts.
//!
//! The reader trusts nothing: it checks the seal in one streaming pass
//! before reading a single batch, then streams frame by frame (memory is
//! bounded by one frame, whatever the file size), and reports where and why
//! a file stops making sense.

use std::io::{ErrorKind, Read, Seek, SeekFrom};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::click_formats::{decode_batch, decode_batch_v4, decode_batch_v7};
use crate::ipc::{ClickBatch, FrameError, HEADER_LEN, MAX_FRAME};
use crate::key::DeploymentKey;

/// First bytes of a sealed spool file (format 4, clicks with a country and
/// a variant; format 1 had no seal).
pub const MAGIC: &[u8; 8] = b"SLSPOOL\x04";
/// Format 3: clicks with a country, without a variant; still read (no
/// variant), so spool files left by a module before the upgrade count.
pub const MAGIC_V3: &[u8; 8] = b"SLSPOOL\x03";
/// Format 2: sealed, clicks without a country; still read (the country is
/// unknown, no variant).
pub const MAGIC_V2: &[u8; 8] = b"SLSPOOL\x02";

/// How a batch of a file with this magic decodes.
type Decode = fn(&[u8]) -> Result<ClickBatch, FrameError>;

/// Every format read, by magic.
const FORMATS: [(&[u8; 8], Decode); 3] = [
    (MAGIC, decode_batch),
    (MAGIC_V3, decode_batch_v7),
    (MAGIC_V2, decode_batch_v4),
];
/// Bytes of the seal at the end of the file.
pub const SEAL_LEN: usize = 32;

/// Largest spool file the daemon reads. A worker spools at most its pending
/// bound (100,000 rows, a few MiB); anything bigger is not a worker's.
pub const MAX_SPOOL_FILE: u64 = 64 << 20;

/// The spool subkey: seals files at the edge, checks them in the daemon.
#[derive(Clone)]
pub struct SpoolSeal {
    key: [u8; 32],
}

impl std::fmt::Debug for SpoolSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SpoolSeal(..)")
    }
}

impl SpoolSeal {
    /// The spool subkey of a deployment key.
    pub fn new(key: &DeploymentKey) -> Self {
        Self {
            key: key.derive(b"spool-seal"),
        }
    }

    fn mac(&self) -> Hmac<Sha256> {
        <Hmac<Sha256> as Mac>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"))
    }

    /// A whole spool file holding `frames` (IPC frames of click batches).
    pub fn seal(&self, frames: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(MAGIC.len() + frames.len() + SEAL_LEN);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(frames);
        let mut mac = self.mac();
        mac.update(&out);
        out.extend_from_slice(&mac.finalize().into_bytes());
        out
    }

    /// Checks the magic and the seal of a file of `len` bytes in one
    /// streaming pass, then returns a reader of its batches. Nothing of an
    /// unsealed or altered file is ever parsed.
    pub fn open<R: Read + Seek>(
        &self,
        mut file: R,
        len: u64,
    ) -> Result<SpoolReader<std::io::Take<R>>, SpoolDamage> {
        let damage = |offset: u64, reason: String| SpoolDamage { offset, reason };
        let min = (MAGIC.len() + SEAL_LEN) as u64;
        if len < min {
            return Err(damage(
                0,
                format!("{len} bytes is too short for a sealed spool file"),
            ));
        }
        let mut magic = [0u8; 8];
        if read_full(&mut file, &mut magic).map_err(|e| damage(0, format!("read error: {e}")))?
            < magic.len()
        {
            return Err(damage(0, "truncated magic".into()));
        }
        let Some(&(_, decode)) = FORMATS.iter().find(|(m, _)| **m == magic) else {
            return Err(damage(
                0,
                "not a sealed spool file (bad magic; written by an older module or not by one)"
                    .into(),
            ));
        };
        let body = len - min;
        let mut mac = self.mac();
        mac.update(&magic);
        let mut buf = [0u8; 64 * 1024];
        let mut left = body;
        while left > 0 {
            let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            let got = read_full(&mut file, &mut buf[..want])
                .map_err(|e| damage(len - left, format!("read error: {e}")))?;
            if got < want {
                return Err(damage(len - left, "file shrank while being read".into()));
            }
            mac.update(&buf[..got]);
            left -= got as u64;
        }
        let mut seal = [0u8; SEAL_LEN];
        if read_full(&mut file, &mut seal).map_err(|e| damage(len, format!("read error: {e}")))?
            < SEAL_LEN
        {
            return Err(damage(len - SEAL_LEN as u64, "truncated seal".into()));
        }
        if mac.verify_slice(&seal).is_err() {
            return Err(damage(
                len - SEAL_LEN as u64,
                "the seal does not match: not written with this deployment key, or altered".into(),
            ));
        }
        file.seek(SeekFrom::Start(MAGIC.len() as u64))
            .map_err(|e| damage(MAGIC.len() as u64, format!("seek error: {e}")))?;
        let mut reader = SpoolReader::new(file.take(body));
        reader.decode = decode;
        Ok(reader)
    }
}

/// Where and why a spool file stopped parsing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason} at byte {offset}")]
pub struct SpoolDamage {
    /// Byte offset of the frame that failed.
    pub offset: u64,
    /// What was wrong with it.
    pub reason: String,
}

/// Reads the batches of a spool file one frame at a time.
pub struct SpoolReader<R> {
    inner: R,
    offset: u64,
    done: bool,
    payload: Vec<u8>,
    /// Decodes a batch of the file's format.
    decode: Decode,
}

impl<R: Read> SpoolReader<R> {
    /// A reader over `inner` (a file opened by the caller).
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            offset: 0,
            done: false,
            payload: Vec::new(),
            decode: decode_batch,
        }
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn damage(&mut self, reason: impl Into<String>) -> Option<Result<ClickBatch, SpoolDamage>> {
        self.done = true;
        Some(Err(SpoolDamage {
            offset: self.offset,
            reason: reason.into(),
        }))
    }
}

/// Fills `buf` from `r`; returns how many bytes came before end of file.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

impl<R: Read> Iterator for SpoolReader<R> {
    type Item = Result<ClickBatch, SpoolDamage>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let mut header = [0u8; HEADER_LEN];
        match read_full(&mut self.inner, &mut header) {
            Ok(0) => {
                self.done = true;
                return None;
            }
            Ok(n) if n < HEADER_LEN => return self.damage("truncated frame header"),
            Ok(_) => {}
            Err(e) => return self.damage(format!("read error: {e}")),
        }
        let len = u32::from_be_bytes(header) as usize;
        if len > MAX_FRAME {
            return self.damage(format!(
                "frame of {len} bytes exceeds the limit of {MAX_FRAME}"
            ));
        }
        self.payload.resize(len, 0);
        let mut payload = std::mem::take(&mut self.payload);
        let got = read_full(&mut self.inner, &mut payload);
        let outcome = match got {
            Ok(n) if n < len => Err(format!("truncated frame ({n} of {len} bytes)")),
            Ok(_) => (self.decode)(&payload).map_err(|e| e.to_string()),
            Err(e) => Err(format!("read error: {e}")),
        };
        self.payload = payload;
        match outcome {
            Ok(batch) => {
                self.offset += (HEADER_LEN + len) as u64;
                Some(Ok(batch))
            }
            Err(reason) => self.damage(reason),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipc::{write_frame, BatchId};
    use crate::key::DeploymentKey;

    fn file(n: u8) -> Vec<u8> {
        let mut buf = Vec::new();
        for i in 0..n {
            let b = ClickBatch {
                batch_id: BatchId([i; 16]),
                clicks: vec![],
            };
            write_frame(&b, &mut buf).unwrap();
        }
        buf
    }

    fn read(bytes: &[u8]) -> (usize, Option<SpoolDamage>) {
        let mut good = 0;
        for item in SpoolReader::new(bytes) {
            match item {
                Ok(_) => good += 1,
                Err(d) => return (good, Some(d)),
            }
        }
        (good, None)
    }

    #[test]
    fn whole_files_read_to_the_end() {
        assert_eq!(read(&file(3)), (3, None));
        assert_eq!(read(&[]), (0, None));
    }

    #[test]
    fn damage_keeps_the_good_batches_before_it_and_says_where() {
        let good = file(2);
        let mut cut = good.clone();
        cut.truncate(good.len() - 1);
        let (n, d) = read(&cut);
        assert_eq!(n, 1);
        let d = d.unwrap();
        assert_eq!(d.offset, (good.len() / 2) as u64);
        assert!(d.reason.contains("truncated frame"), "{d}");

        let mut junk = good.clone();
        junk.extend_from_slice(&[0, 0, 0, 1, 0xff]);
        let (n, d) = read(&junk);
        assert_eq!(n, 2);
        assert!(d.unwrap().to_string().contains("malformed"));

        let mut half_header = good.clone();
        half_header.extend_from_slice(&[0, 0]);
        assert!(read(&half_header).1.unwrap().reason.contains("header"));
    }

    #[test]
    fn only_sealed_files_under_the_key_open() {
        let seal = SpoolSeal::new(&DeploymentKey::from_bytes([1; 32]));
        let sealed = seal.seal(&file(3));
        let open = |bytes: &[u8], seal: &SpoolSeal| {
            seal.open(std::io::Cursor::new(bytes.to_vec()), bytes.len() as u64)
                .map(|r| r.count())
        };
        assert_eq!(open(&sealed, &seal), Ok(3));
        let other = SpoolSeal::new(&DeploymentKey::from_bytes([2; 32]));
        assert!(open(&sealed, &other)
            .unwrap_err()
            .reason
            .contains("seal does not match"));
        let mut flipped = sealed.clone();
        flipped[12] ^= 1;
        assert!(open(&flipped, &seal)
            .unwrap_err()
            .reason
            .contains("seal does not match"));
        assert!(open(&file(3), &seal).unwrap_err().reason.contains("magic"));
        assert!(open(&sealed[..20], &seal)
            .unwrap_err()
            .reason
            .contains("too short"));
        let mut longer = sealed.clone();
        longer.push(0);
        assert!(open(&longer, &seal).is_err());
        // A file that says it is longer than it is.
        let r = seal.open(
            std::io::Cursor::new(sealed.clone()),
            sealed.len() as u64 + 10,
        );
        assert!(r.is_err());
    }

    /// A batch with a country and a variant.
    fn rich_batch() -> ClickBatch {
        use crate::country::Country;
        use crate::device::DeviceClass;
        use crate::ipc::ClickCount;
        ClickBatch {
            batch_id: BatchId([4; 16]),
            clicks: vec![ClickCount {
                link_id: 3,
                hour: 400_000,
                device: DeviceClass::Desktop,
                bot: false,
                referrer: None,
                count: 2,
                country: Country::parse("DE").unwrap(),
                variant: 3,
            }],
        }
    }

    /// A sealed file of an older format, under `magic`: the batch's frame
    /// without its row's last `drop` bytes (the fields that format lacked).
    fn old_file(seal: &SpoolSeal, batch: &ClickBatch, drop: usize, magic: &[u8; 8]) -> Vec<u8> {
        use crate::ipc::{decode_payload, frame};
        let mut old = frame(batch).unwrap();
        old.truncate(old.len() - drop);
        let len = (old.len() - HEADER_LEN) as u32;
        old[..HEADER_LEN].copy_from_slice(&len.to_be_bytes());
        assert!(decode_payload::<ClickBatch>(&old[HEADER_LEN..]).is_err());
        let mut sealed = seal.seal(&old);
        sealed[..8].copy_from_slice(magic);
        // Re-seal over the old magic.
        let body_end = sealed.len() - SEAL_LEN;
        let mut mac = seal.mac();
        mac.update(&sealed[..body_end]);
        let tag = mac.finalize().into_bytes();
        sealed[body_end..].copy_from_slice(&tag);
        sealed
    }

    fn batches(seal: &SpoolSeal, file: Vec<u8>) -> Vec<ClickBatch> {
        seal.open(std::io::Cursor::new(file.clone()), file.len() as u64)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn format_2_files_still_count_with_the_unknown_country() {
        let seal = SpoolSeal::new(&DeploymentKey::from_bytes([1; 32]));
        let batch = rich_batch();
        // Format 2 rows lack the country (two bytes) and the variant (one).
        let got = batches(&seal, old_file(&seal, &batch, 3, MAGIC_V2));
        let mut want = batch.clone();
        want.clicks[0].country = crate::country::UNKNOWN;
        want.clicks[0].variant = 0;
        assert_eq!(got, vec![want]);
    }

    #[test]
    fn format_3_files_still_count_without_a_variant() {
        let seal = SpoolSeal::new(&DeploymentKey::from_bytes([1; 32]));
        let batch = rich_batch();
        // Format 3 rows lack the variant, their last byte.
        let got = batches(&seal, old_file(&seal, &batch, 1, MAGIC_V3));
        let mut want = batch.clone();
        want.clicks[0].variant = 0;
        assert_eq!(got, vec![want]);
        // The current format keeps the country and the variant.
        let new = seal.seal(&crate::ipc::frame(&batch).unwrap());
        assert_eq!(&new[..8], MAGIC);
        assert_eq!(batches(&seal, new), vec![batch]);
    }

    #[test]
    fn a_huge_length_is_refused_before_any_allocation() {
        let (n, d) = read(&[0xff, 0xff, 0xff, 0xff, 1, 2, 3]);
        assert_eq!(n, 0);
        assert!(d.unwrap().reason.contains("exceeds the limit"));
    }
}
