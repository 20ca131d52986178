//! Visit leases of limited links: how many of a link's visits the edges
//! were handed, so that together they never redirect more than its
//! `max_visits`. One rule, [`grant`], both stores apply in one write.

use async_trait::async_trait;

use super::StoreResult;

/// Visits leased to edges, per link.
#[async_trait]
pub trait VisitStore: Send + Sync {
    /// Leases visits of link `id` to an edge that has `want` visitors
    /// waiting ([`grant`]); how many. 0 for no such link, or one that is
    /// switched off or expired at `now`.
    async fn lease_visits(&self, id: u64, want: u32, now: i64) -> StoreResult<u32>;

    /// Takes back `count` visits of link `id` an edge never spent (never
    /// below the visits its people made).
    async fn return_visits(&self, id: u64, count: u32) -> StoreResult<()>;
}

/// What a lease reads of a link, in the write that leases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseState {
    /// `max_visits` (`None`: no limit).
    pub max: Option<i64>,
    /// Visits its people made (`clicks - bot_clicks`).
    pub humans: i64,
    /// Its `created_at`, which tells its lease row from one a recycled
    /// id's earlier link left.
    pub created: i64,
    /// Not switched off, not expired.
    pub open: bool,
    /// Visits leased to the edges so far.
    pub leased: i64,
}

/// At least this share of what a link has left goes to one lease (1/8):
/// an edge under load asks about once per eighth of the link's visits,
/// and a node that stops gets no more than that stranded with it.
const CHUNK_SHARE: i64 = 8;

/// What a lease of `want` visits gets, for a link with `max` visits
/// (`None`: no limit any more) of which its people made `humans` and the
/// edges were leased `leased`: the grant and the new leased total. Every
/// counted visit was leased first, unless it came before leases did, so
/// the visits used are the larger of the two; the grant is what is asked
/// or an eighth of the rest, whichever is more, never past the limit.
pub fn grant(max: Option<i64>, humans: i64, leased: i64, want: u32) -> (u32, i64) {
    let used = leased.max(humans).max(0);
    let Some(max) = max else {
        return (want, used);
    };
    let left = (max - used).max(0);
    let chunk = (left + CHUNK_SHARE - 1) / CHUNK_SHARE;
    let granted = left.min(chunk.max(i64::from(want)));
    (granted as u32, used + granted)
}

/// The leased total after `count` unspent visits came back.
pub fn returned(humans: i64, leased: i64, count: u32) -> i64 {
    (leased - i64::from(count)).max(humans).max(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_never_pass_the_limit() {
        assert_eq!(
            grant(Some(3), 0, 0, 1),
            (1, 1),
            "an eighth of 3, at least 1"
        );
        assert_eq!(grant(Some(3), 0, 1, 5), (2, 3), "what is left");
        assert_eq!(grant(Some(3), 0, 3, 1), (0, 3), "nothing left");
        assert_eq!(grant(Some(100), 0, 0, 1), (13, 13));
        assert_eq!(
            grant(Some(100), 40, 13, 2),
            (8, 48),
            "counted before leases"
        );
        assert_eq!(grant(Some(5), 9, 0, 1), (0, 9), "already past it");
        assert_eq!(grant(None, 4, 2, 3), (3, 4), "no limit: what is asked");
        let (mut leased, mut total) = (0, 0);
        while let (g @ 1.., l) = grant(Some(1000), 0, leased, 1) {
            total += g;
            leased = l;
        }
        assert_eq!(total, 1000, "leases add up to the limit exactly");
    }

    #[test]
    fn returns_never_go_below_what_people_spent() {
        assert_eq!(returned(2, 10, 3), 7);
        assert_eq!(returned(8, 10, 5), 8);
        assert_eq!(returned(0, 1, 9), 0);
    }
}
