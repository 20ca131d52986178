//! The in-memory sum of acknowledged clicks: per link, totals, counts per
//! `clicks` row (hour, device, bot flag, referrer, country) and per
//! `variant_clicks` row (hour, A/B variant).

use std::collections::HashMap;

use shortlink_core::country::Country;
use shortlink_core::ipc::ClickBatch;

/// Longest referrer host kept (a DNS name is at most 253 bytes).
const MAX_REFERRER: usize = 253;

/// The dimensions of one `clicks` row (besides the link).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RowKey {
    /// Hours since the Unix epoch.
    pub hour: i64,
    /// Device class (its `u8` value).
    pub device: u8,
    /// Counted as a bot (user agent).
    pub bot: bool,
    /// Lower-case referrer host, `""` for none.
    pub referrer: String,
    /// The visitor's country (`--`: unknown).
    pub country: Country,
}

/// A link's `clicks` rows with their counts. Most links pending have one
/// row (one hour, one device class, no referrer), kept in the link's own
/// entry: no allocation of its own, and no second cache miss per click.
pub type Rows = smallvec::SmallVec<[(RowKey, i64); 1]>;

/// Clicks of one link not yet in the tables.
#[derive(Debug, Clone, Default)]
pub struct LinkAgg {
    /// All clicks, bots included.
    pub clicks: i64,
    /// The bot share of `clicks`.
    pub bots: i64,
    /// When the latest batch with clicks of this link was acknowledged
    /// (renew-on-access moves the expiry from this time).
    pub last_at: i64,
    /// Per hour, device, bot flag and referrer (a few per link: a list,
    /// the first row in place).
    pub rows: Rows,
    /// Per hour and variant index, for clicks sent to an A/B variant only
    /// (empty for a link without variants).
    pub variants: Vec<((i64, u8), i64)>,
}

impl LinkAgg {
    /// These clicks less the rows whose hour `keep` refuses, totals and
    /// variant rows cut alike.
    pub fn since(&self, keep: impl Fn(i64) -> bool) -> LinkAgg {
        let rows: Rows = self
            .rows
            .iter()
            .filter(|(k, _)| keep(k.hour))
            .cloned()
            .collect();
        LinkAgg {
            clicks: rows.iter().map(|(_, n)| n).sum(),
            bots: rows.iter().filter(|(k, _)| k.bot).map(|(_, n)| n).sum(),
            last_at: self.last_at,
            rows,
            variants: self
                .variants
                .iter()
                .filter(|((hour, _), _)| keep(*hour))
                .copied()
                .collect(),
        }
    }
}

/// Acknowledged clicks, summed per link and per `clicks` row.
#[derive(Debug, Clone, Default)]
pub struct Aggregate {
    /// Per link id. Every acknowledged click passes here on the writer
    /// thread, so the hash is foldhash's (seeded per process), not SipHash,
    /// which was most of `add_batch`'s time (bench/profiles/hot.txt).
    pub(crate) links: HashMap<u64, LinkAgg, foldhash::fast::RandomState>,
    /// Batches added.
    pub(crate) batches: u64,
    /// Distinct `clicks` rows over all links.
    pub(crate) rows: u64,
}

/// A referrer as stored: lower case, at most [`MAX_REFERRER`] bytes.
fn referrer_key(r: Option<&str>) -> std::borrow::Cow<'_, str> {
    let Some(r) = r else {
        return "".into();
    };
    let mut end = r.len().min(MAX_REFERRER);
    while !r.is_char_boundary(end) {
        end -= 1;
    }
    let r = &r[..end];
    if r.bytes().any(|b| b.is_ascii_uppercase()) {
        r.to_ascii_lowercase().into()
    } else {
        r.into()
    }
}

/// Adds `n` clicks of `(hour, variant)` to a link's variant rows.
fn add_variant(rows: &mut Vec<((i64, u8), i64)>, key: (i64, u8), n: i64) {
    match rows.iter_mut().find(|(k, _)| *k == key) {
        Some((_, count)) => *count += n,
        None => rows.push((key, n)),
    }
}

impl Aggregate {
    /// True when nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty() && self.batches == 0
    }

    /// Batches folded in.
    pub fn batches(&self) -> u64 {
        self.batches
    }

    /// Distinct `clicks` rows held.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Adds one batch acknowledged at `at`. Items with no clicks or an id
    /// SQLite cannot hold are skipped (no link can have such an id).
    pub fn add_batch(&mut self, batch: &ClickBatch, at: i64) {
        self.batches += 1;
        for c in &batch.clicks {
            if c.count == 0 || c.link_id > i64::MAX as u64 {
                continue;
            }
            let n = c.count as i64;
            let l = self.links.entry(c.link_id).or_default();
            l.clicks += n;
            if c.bot {
                l.bots += n;
            }
            l.last_at = l.last_at.max(at);
            if let Some(variant) = c.variant_index() {
                add_variant(&mut l.variants, (c.hour as i64, variant), n);
            }
            let referrer = referrer_key(c.referrer.as_deref());
            let (hour, device) = (c.hour as i64, c.device as u8);
            match l.rows.iter_mut().find(|(k, _)| {
                k.hour == hour
                    && k.device == device
                    && k.bot == c.bot
                    && k.country == c.country
                    // Most clicks have no referrer: no `memcmp` call for them.
                    && k.referrer.len() == referrer.len()
                    && (referrer.is_empty() || k.referrer == referrer)
            }) {
                Some((_, count)) => *count += n,
                None => {
                    self.rows += 1;
                    l.rows.push((
                        RowKey {
                            hour,
                            device,
                            bot: c.bot,
                            referrer: referrer.into_owned(),
                            country: c.country,
                        },
                        n,
                    ));
                }
            }
        }
    }

    /// Adds everything in `other`.
    pub fn merge(&mut self, other: &Aggregate) {
        self.batches += other.batches;
        for (id, o) in &other.links {
            let l = self.links.entry(*id).or_default();
            l.clicks += o.clicks;
            l.bots += o.bots;
            l.last_at = l.last_at.max(o.last_at);
            for &(key, n) in &o.variants {
                add_variant(&mut l.variants, key, n);
            }
            for (key, n) in &o.rows {
                match l.rows.iter_mut().find(|(k, _)| k == key) {
                    Some((_, count)) => *count += n,
                    None => {
                        self.rows += 1;
                        l.rows.push((key.clone(), *n));
                    }
                }
            }
        }
    }

    /// Moves the links in `ids` (those pending) to an aggregate of their own
    /// (of no batch: the batches stay here, with the rest of their links).
    pub fn take_links(&mut self, ids: &[u64]) -> Aggregate {
        let mut out = Aggregate::default();
        for id in ids {
            if let Some(l) = self.links.remove(id) {
                self.rows -= l.rows.len() as u64;
                out.rows += l.rows.len() as u64;
                out.links.insert(*id, l);
            }
        }
        out
    }

    /// Ids of the links with pending clicks.
    pub fn link_ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.links.keys().copied()
    }

    /// Links with pending clicks.
    pub fn link_count(&self) -> usize {
        self.links.len()
    }

    /// The pending clicks of one link.
    pub fn link(&self, id: u64) -> Option<&LinkAgg> {
        self.links.get(&id)
    }
}
