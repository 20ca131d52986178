//! Click batches as older modules and daemons wrote them, still decoded so
//! an upgrade loses no click: spool files left by a module before it, and
//! SQLite `click_log` rows acknowledged but not folded when the daemon
//! stopped. Each old row gets what it did not carry: the unknown country,
//! no variant.

use serde::Deserialize;

use crate::country::{Country, UNKNOWN};
use crate::device::DeviceClass;
use crate::ipc::{decode_payload, BatchId, ClickBatch, ClickCount, FrameError};

/// A click row as IPC protocol 4 and spool format 2 wrote it: no country.
#[derive(Deserialize)]
#[cfg_attr(test, derive(serde::Serialize))]
struct ClickCountV4 {
    link_id: u64,
    hour: u32,
    device: DeviceClass,
    bot: bool,
    referrer: Option<String>,
    count: u32,
}

/// A click batch as an older writer wrote it: rows of an older shape.
#[derive(Deserialize)]
#[cfg_attr(test, derive(serde::Serialize))]
struct OldBatch<R> {
    batch_id: BatchId,
    clicks: Vec<R>,
}

/// A click batch as IPC protocol 4 and spool format 2 wrote it.
#[cfg(test)]
type ClickBatchV4 = OldBatch<ClickCountV4>;

/// A click row as IPC protocols 5 to 7 and spool format 3 wrote it: a
/// country, no variant.
#[derive(Deserialize)]
#[cfg_attr(test, derive(serde::Serialize))]
struct ClickCountV7 {
    link_id: u64,
    hour: u32,
    device: DeviceClass,
    bot: bool,
    referrer: Option<String>,
    count: u32,
    country: Country,
}

/// A click batch as IPC protocols 5 to 7 and spool format 3 wrote it.
#[cfg(test)]
type ClickBatchV7 = OldBatch<ClickCountV7>;

impl From<ClickCountV4> for ClickCountV7 {
    /// A row from before countries: the unknown country.
    fn from(c: ClickCountV4) -> Self {
        ClickCountV7 {
            link_id: c.link_id,
            hour: c.hour,
            device: c.device,
            bot: c.bot,
            referrer: c.referrer,
            count: c.count,
            country: UNKNOWN,
        }
    }
}

impl From<ClickCountV7> for ClickCount {
    /// A row from before variants: it counts for no variant.
    fn from(c: ClickCountV7) -> Self {
        ClickCount {
            link_id: c.link_id,
            hour: c.hour,
            device: c.device,
            bot: c.bot,
            referrer: c.referrer,
            count: c.count,
            country: c.country,
            variant: 0,
        }
    }
}

/// A batch of rows of shape `R`, each brought up to the current shape.
fn decode_old<R>(payload: &[u8], up: impl Fn(R) -> ClickCount) -> Result<ClickBatch, FrameError>
where
    R: serde::de::DeserializeOwned,
{
    let old: OldBatch<R> = decode_payload(payload)?;
    Ok(ClickBatch {
        batch_id: old.batch_id,
        clicks: old.clicks.into_iter().map(up).collect(),
    })
}

/// Decodes a payload holding a batch written before clicks had a country
/// (spool files of format 2, SQLite `click_log` rows of format 1): every
/// row's country is unknown, none has a variant.
pub fn decode_batch_v4(payload: &[u8]) -> Result<ClickBatch, FrameError> {
    decode_old(payload, |c: ClickCountV4| ClickCountV7::from(c).into())
}

/// Decodes a payload holding a batch written before clicks had a variant
/// (spool files of format 3, SQLite `click_log` rows of format 2): every
/// row counts for the link's main target.
pub fn decode_batch_v7(payload: &[u8]) -> Result<ClickBatch, FrameError> {
    decode_old(payload, |c: ClickCountV7| c.into())
}

/// Decodes a payload in the current format.
pub fn decode_batch(payload: &[u8]) -> Result<ClickBatch, FrameError> {
    decode_payload(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: u32 = 500_000;

    #[test]
    fn batches_from_before_countries_decode_with_the_unknown_country() {
        let old = ClickBatchV4 {
            batch_id: BatchId([9; 16]),
            clicks: vec![ClickCountV4 {
                link_id: 5,
                hour: HOUR,
                device: DeviceClass::Android,
                bot: true,
                referrer: Some("a.example".into()),
                count: 4,
            }],
        };
        let bytes = postcard::to_allocvec(&old).unwrap();
        let b = decode_batch_v4(&bytes).unwrap();
        assert_eq!(b.batch_id, BatchId([9; 16]));
        assert_eq!(
            b.clicks,
            vec![ClickCount {
                link_id: 5,
                hour: HOUR,
                device: DeviceClass::Android,
                bot: true,
                referrer: Some("a.example".into()),
                count: 4,
                country: UNKNOWN,
                variant: 0,
            }]
        );
        // The current format is not the old one: the difference is seen.
        let new = postcard::to_allocvec(&b).unwrap();
        assert!(decode_batch_v4(&new).is_err());
    }

    #[test]
    fn batches_from_before_variants_decode_for_the_main_target() {
        let de = Country::parse("DE").unwrap();
        let old = ClickBatchV7 {
            batch_id: BatchId([2; 16]),
            clicks: vec![ClickCountV7 {
                link_id: 6,
                hour: HOUR,
                device: DeviceClass::Ios,
                bot: false,
                referrer: None,
                count: 7,
                country: de,
            }],
        };
        let bytes = postcard::to_allocvec(&old).unwrap();
        let b = decode_batch_v7(&bytes).unwrap();
        assert_eq!(
            b.clicks,
            vec![ClickCount {
                link_id: 6,
                hour: HOUR,
                device: DeviceClass::Ios,
                bot: false,
                referrer: None,
                count: 7,
                country: de,
                variant: 0,
            }]
        );
        // Neither reads the other: the current format has one more byte.
        let mut with_variant = b.clone();
        with_variant.clicks[0].variant = 3;
        let new = postcard::to_allocvec(&with_variant).unwrap();
        assert!(decode_batch_v7(&new).is_err());
        assert!(decode_batch(&bytes).is_err());
        assert_eq!(decode_batch(&new).unwrap(), with_variant);
    }
}
