//! Listing the `links` table: filters, sort orders and keyset pages.
//!
//! A page starts after a position `(sort key, id)`, so pages stay stable
//! while links are added: the key is the id itself for creation order, the
//! stored click count, or the expiry (`never` sorting as the far future).

use rusqlite::types::ToSql;
use rusqlite::Connection;

use super::{from_row, COLUMNS};
use crate::store::{Link, LinkState, ListQuery, ListSort, StoreResult};

/// The SQL expression of the sort key.
fn key_sql(sort: ListSort) -> &'static str {
    match sort {
        ListSort::Created => "id",
        ListSort::Clicks => "clicks",
        ListSort::Expires => "coalesce(expires_at, 9223372036854775807)",
    }
}

/// The filter of [`list`] and [`count_matching`]. The state is
/// [`Link::state`] in SQL: disabled, then expired, then exhausted.
const MATCHING: &str = concat!(
    "(:q IS NULL OR instr(url, :q) > 0 OR instr(alias, :q) > 0 OR instr(title, :q) > 0 \
       OR id = :code_id) \
     AND (:tags IS NULL OR CASE WHEN :all_tags \
       THEN (SELECT count(DISTINCT t.value) FROM json_each(links.tags) AS t \
             WHERE t.value IN (SELECT w.value FROM json_each(:tags) AS w)) = json_array_length(:tags) \
       ELSE EXISTS (SELECT 1 FROM json_each(links.tags) AS t \
             WHERE t.value IN (SELECT w.value FROM json_each(:tags) AS w)) END) \
     AND (:state IS NULL OR :state = ",
    state_sql!(),
    ") \
     AND (:created_after IS NULL OR created_at >= :created_after) \
     AND (:created_before IS NULL OR created_at < :created_before) \
     AND (:team IS NULL OR team_id = :team) \
     AND (:broken IS NULL OR broken = :broken)"
);

/// The values of [`MATCHING`]'s parameters.
struct Filter {
    q: Option<String>,
    code_id: Option<i64>,
    tags: Option<String>,
    all_tags: bool,
    state: Option<&'static str>,
    now: i64,
    created_after: Option<i64>,
    created_before: Option<i64>,
    team: Option<i64>,
    broken: Option<bool>,
}

impl Filter {
    fn new(query: &ListQuery) -> Self {
        Self {
            q: query.q.clone(),
            code_id: query.stored_code_id(),
            tags: query
                .tag_set()
                .map(|tags| serde_json::Value::from(tags).to_string()),
            all_tags: query.all_tags,
            state: query.state.map(LinkState::as_str),
            now: query.now,
            created_after: query.created_after,
            created_before: query.created_before,
            team: query.team,
            broken: query.broken,
        }
    }

    fn params(&self) -> Vec<(&'static str, &dyn ToSql)> {
        vec![
            (":q", &self.q),
            (":code_id", &self.code_id),
            (":tags", &self.tags),
            (":all_tags", &self.all_tags),
            (":state", &self.state),
            (":now", &self.now),
            (":created_after", &self.created_after),
            (":created_before", &self.created_before),
            (":team", &self.team),
            (":broken", &self.broken),
        ]
    }
}

/// One page of links in the query's order.
pub fn list(conn: &Connection, query: &ListQuery) -> StoreResult<Vec<Link>> {
    let key = key_sql(query.sort);
    let (cmp, dir) = if query.ascending {
        (">", "ASC")
    } else {
        ("<", "DESC")
    };
    let filter = Filter::new(query);
    let mut params = filter.params();
    let limit = query.limit as i64;
    params.push((":limit", &limit));
    let after = query.after.map(|(k, id)| (k, id as i64));
    let sql = match (&after, query.sort) {
        (None, _) => format!(
            "SELECT {COLUMNS} FROM links WHERE {MATCHING} ORDER BY {key} {dir}, id {dir} LIMIT :limit"
        ),
        // The id is the key: a plain range the rowid index serves.
        (Some(_), ListSort::Created) => format!(
            "SELECT {COLUMNS} FROM links WHERE {MATCHING} AND id {cmp} :after_id \
             ORDER BY id {dir} LIMIT :limit"
        ),
        (Some(_), _) => format!(
            "SELECT {COLUMNS} FROM links WHERE {MATCHING} \
             AND ({key} {cmp} :after_key OR ({key} = :after_key AND id {cmp} :after_id)) \
             ORDER BY {key} {dir}, id {dir} LIMIT :limit"
        ),
    };
    if let Some((k, id)) = &after {
        params.push((":after_id", id));
        if query.sort != ListSort::Created {
            params.push((":after_key", k));
        }
    }
    let mut st = conn.prepare_cached(&sql)?;
    let rows = st.query_map(params.as_slice(), from_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// How many links match the filter of `query` (all pages).
pub fn count_matching(conn: &Connection, query: &ListQuery) -> StoreResult<u64> {
    let sql = format!("SELECT count(*) FROM links WHERE {MATCHING}");
    let filter = Filter::new(query);
    let n: i64 = conn
        .prepare_cached(&sql)?
        .query_row(filter.params().as_slice(), |r| r.get(0))?;
    Ok(n as u64)
}

#[cfg(test)]
mod tests {
    use super::super::insert;
    use super::*;
    use crate::store::sqlite::tests::temp_store;

    fn link(id: u64, expires_at: Option<i64>, tags: &[&str]) -> Link {
        Link {
            id,
            url: format!("https://example.com/{id}"),
            created_at: id as i64 * 10,
            updated_at: 1,
            expires_at,
            tags: tags.iter().map(|t| t.to_string()).collect(),
            ..Link::default()
        }
    }

    /// Every page of `query`, following the position of each page's last link.
    fn pages(c: &Connection, mut query: ListQuery) -> Vec<Vec<u64>> {
        let mut out = Vec::new();
        loop {
            let page = list(c, &query).unwrap();
            if page.is_empty() {
                return out;
            }
            let last = page.last().unwrap();
            query.after = Some((query.sort.key(last), last.id));
            out.push(page.iter().map(|l| l.id).collect());
        }
    }

    #[tokio::test]
    async fn sorts_filters_and_pages() {
        let (_dir, store) = temp_store();
        store
            .write(|c| {
                insert(c, &link(1, Some(300), &["a"]), None)?;
                insert(c, &link(2, None, &["a", "b"]), None)?;
                insert(c, &link(3, Some(100), &["b"]), None)?;
                let mut off = link(4, None, &[]);
                off.disabled = true;
                insert(c, &off, None)?;
                let mut used = link(5, None, &["c"]);
                used.max_visits = Some(3);
                insert(c, &used, None)?;
                // insert starts every count at 0; clicks arrive later.
                for l in [1, 2, 3, 5] {
                    let clicks = [0, 5, 9, 5, 0, 3][l];
                    c.execute(
                        "UPDATE links SET clicks = ?1 WHERE id = ?2",
                        [clicks, l as i64],
                    )?;
                }
                Ok(())
            })
            .await
            .unwrap();
        store
            .read(|c| {
                let q = |sort, ascending| ListQuery {
                    limit: 2,
                    sort,
                    ascending,
                    now: 200,
                    ..Default::default()
                };
                assert_eq!(
                    pages(c, q(ListSort::Created, false)),
                    vec![vec![5, 4], vec![3, 2], vec![1]]
                );
                assert_eq!(
                    pages(c, q(ListSort::Clicks, false)),
                    vec![vec![2, 3], vec![1, 5], vec![4]]
                );
                assert_eq!(
                    pages(c, q(ListSort::Clicks, true)),
                    vec![vec![4, 5], vec![1, 3], vec![2]]
                );
                assert_eq!(
                    pages(c, q(ListSort::Expires, true)),
                    vec![vec![3, 1], vec![2, 4], vec![5]]
                );
                let count = |f: &dyn Fn(&mut ListQuery)| {
                    let mut query = q(ListSort::Created, false);
                    query.limit = 100;
                    f(&mut query);
                    let ids: Vec<u64> = list(c, &query).unwrap().iter().map(|l| l.id).collect();
                    assert_eq!(count_matching(c, &query).unwrap(), ids.len() as u64);
                    ids
                };
                let tags = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<Vec<_>>();
                assert_eq!(count(&|q| q.tags = tags(&["a", "b"])), vec![3, 2, 1]);
                assert_eq!(
                    count(&|q| {
                        q.tags = tags(&["a", "b"]);
                        q.all_tags = true
                    }),
                    vec![2]
                );
                assert_eq!(
                    count(&|q| {
                        q.tags = tags(&["b", "b"]);
                        q.all_tags = true
                    }),
                    vec![3, 2]
                );
                for (state, want) in [
                    (LinkState::Active, vec![2, 1]),
                    (LinkState::Disabled, vec![4]),
                    (LinkState::Expired, vec![3]),
                    (LinkState::Exhausted, vec![5]),
                ] {
                    assert_eq!(count(&|q| q.state = Some(state)), want, "{state:?}");
                }
                assert_eq!(
                    count(&|q| {
                        q.created_after = Some(20);
                        q.created_before = Some(40)
                    }),
                    vec![3, 2]
                );
                Ok(())
            })
            .await
            .unwrap();
    }
}
