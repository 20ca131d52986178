//! What the PostgreSQL tests share: a private cluster and a daemon `Config`
//! pointing at one of its databases, the password in the cluster's file.

#![allow(dead_code)]

use shortlinkd::config::{Config, DatabaseUrl};
use shortlinkd::store::postgres::{self, Pg};
use testpg::PgCluster;

/// A `Config` for database `db` of `cluster` (created here).
pub fn config_for(cluster: &PgCluster, db: &str) -> Config {
    let url = cluster.create_db(db);
    Config {
        database: Some(DatabaseUrl::parse(&url).unwrap()),
        database_password_file: Some(cluster.password_file()),
        ..Config::default()
    }
}

/// A migrated database `db` of `cluster`.
pub async fn migrated(cluster: &PgCluster, db: &str) -> Pg {
    postgres::connect(&config_for(cluster, db)).await.unwrap()
}

/// Inserts a bare link.
pub async fn add_link(pg: &Pg, id: i64, alias: Option<&str>, max_visits: Option<i64>) {
    pg.get()
        .await
        .unwrap()
        .execute(
            "INSERT INTO links (id, alias, url, created_at, updated_at, max_visits) \
             VALUES ($1, $2, 'https://example.com/', 0, 0, $3)",
            &[&id, &alias, &max_visits],
        )
        .await
        .unwrap();
}
