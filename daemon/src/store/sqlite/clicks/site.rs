//! Click stats of every link over a range of hours: totals, a series and
//! the most clicked links (the `clicks` table plus the pending clicks).

use std::collections::HashSet;

use rusqlite::{named_params, Connection};
use shortlink_core::country::Country;

use super::pending::ClickOverlay;
use crate::store::clicks::SiteTally;
use crate::store::{SiteFilter, SiteStats, StoreResult};

/// The links `filter` keeps (its team's, with its tag), as SQL over the
/// parameters `:team` and `:tag`.
const KEPT: &str = "(:team IS NULL OR team_id = :team) AND (:tag IS NULL OR EXISTS \
     (SELECT 1 FROM json_each(links.tags) AS t WHERE t.value = :tag))";

/// Stats of every link `filter` keeps for hours `from_hour..=to_hour`, in
/// hour or day buckets, with the `top` most clicked links.
pub fn site_stats(
    conn: &Connection,
    overlay: &ClickOverlay<'_>,
    (from_hour, to_hour): (i64, i64),
    daily: bool,
    top: usize,
    filter: &SiteFilter,
) -> StoreResult<SiteStats> {
    let mut tally = SiteTally::new(daily);
    let every = filter.team.is_none() && filter.tag.is_none();
    let kept = named_params! { ":team": filter.team, ":tag": filter.tag };
    {
        let mut st = conn.prepare_cached(&format!(
            "SELECT link_id, hour, bot, country, sum(count) FROM clicks \
             WHERE hour BETWEEN :from AND :to \
             AND (:every OR link_id IN (SELECT id FROM links WHERE {KEPT})) \
             GROUP BY link_id, hour, bot, country"
        ))?;
        let mut params = kept.to_vec();
        params.extend(named_params! { ":from": from_hour, ":to": to_hour, ":every": every });
        let mut rows = st.query(params.as_slice())?;
        while let Some(r) = rows.next()? {
            let country = Country::from_stored(r.get_ref(3)?.as_str().unwrap_or(""));
            tally.add(
                r.get::<_, i64>(0)? as u64,
                r.get(1)?,
                r.get(2)?,
                country,
                r.get(4)?,
            );
        }
    }
    // Pending clicks name only their link: the kept ids decide.
    let kept_ids: Option<HashSet<u64>> = if every {
        None
    } else {
        let mut st = conn.prepare_cached(&format!("SELECT id FROM links WHERE {KEPT}"))?;
        let ids = st.query_map(kept, |r| r.get::<_, i64>(0))?;
        Some(
            ids.map(|id| id.map(|id| id as u64))
                .collect::<Result<_, _>>()?,
        )
    };
    for (link, k, n) in overlay.all_rows() {
        if (from_hour..=to_hour).contains(&k.hour)
            && kept_ids.as_ref().is_none_or(|s| s.contains(&link))
        {
            tally.add(link, k.hour, k.bot, k.country, n);
        }
    }
    Ok(tally.finish(top))
}

#[cfg(test)]
mod tests {
    use crate::store::sqlite::tests::temp_store;

    /// The range query reads through the hour index, not the whole table.
    #[tokio::test]
    async fn the_range_is_read_through_the_hour_index() {
        let (_dir, store) = temp_store();
        let plan: Vec<String> = store
            .read(|c| {
                let mut st = c.prepare(
                    "EXPLAIN QUERY PLAN SELECT link_id, hour, bot, country, sum(count) FROM clicks \
                     WHERE hour BETWEEN 1 AND 2 GROUP BY link_id, hour, bot, country",
                )?;
                let rows = st.query_map([], |r| r.get::<_, String>(3))?;
                Ok(rows.collect::<Result<_, _>>()?)
            })
            .await
            .unwrap();
        assert!(
            plan.iter().any(|p| p.contains("clicks_by_hour")),
            "{plan:?}"
        );
    }
}
