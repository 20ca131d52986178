//! Data from before teams moves into the default team: a SQLite database
//! of schema v11 opened by a real daemon, and a PostgreSQL database of
//! schema v4 opened by the store. Users become admins (they had every
//! power of the admin UI); keys and apps get the role their scopes give
//! (admin → admin, links:write → member, else viewer).

mod common;

use common::Daemon;
use rusqlite::Connection;
use rusqlite_migration::{Migrations, M};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use shortlink_core::DeploymentKey;
use shortlinkd::access::Role;
use shortlinkd::store::postgres::{self, migrate};
use shortlinkd::store::{CodeRef, ListQuery, Store};

/// Keys made before teams: (prefix, scopes, the role they migrate to).
const OLD_KEYS: [(&str, &str, &str); 3] = [
    (
        "aaaaaaaaaaaa",
        "links:write,links:read,stats:read,admin",
        "admin",
    ),
    ("bbbbbbbbbbbb", "links:write,links:read", "member"),
    ("cccccccccccc", "links:read,stats:read", "viewer"),
];

/// The whole secret of an old key: its prefix and 40 more hex digits.
fn secret(prefix: &str) -> String {
    format!("slk_{prefix}{}", "0".repeat(40))
}

fn sqlite_v11(path: &std::path::Path) {
    let mut c = Connection::open(path).unwrap();
    // v4 seals app secrets with the store's SQL function; there are no
    // apps here to seal.
    c.create_scalar_function(
        "seal_app_secret",
        2,
        rusqlite::functions::FunctionFlags::SQLITE_UTF8,
        |_| Ok(String::new()),
    )
    .unwrap();
    Migrations::new(vec![
        M::up(include_str!("../src/store/sqlite/schema_v1.sql")),
        M::up(include_str!("../src/store/sqlite/schema_v2.sql")),
        M::up(include_str!("../src/store/sqlite/schema_v3.sql")),
        M::up(include_str!("../src/store/sqlite/schema_v4.sql")),
        M::up(include_str!("../src/store/sqlite/schema_v5.sql")),
        M::up(include_str!("../src/store/sqlite/schema_v6.sql")),
        M::up(include_str!("../src/store/sqlite/schema_v7.sql")),
        M::up(include_str!("../src/store/sqlite/schema_v8.sql")),
        M::up(include_str!("../src/store/sqlite/schema_v9.sql")),
        M::up(include_str!("../src/store/sqlite/schema_v10.sql")),
        M::up(include_str!("../src/store/sqlite/schema_v11.sql")),
    ])
    .to_latest(&mut c)
    .unwrap();
    let v: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, 11);
    c.execute_batch(
        "INSERT INTO links (id, alias, url, created_at, updated_at, created_by) \
         VALUES (1, 'old-one', 'https://e.com/old', 1, 1, 'key:1');
         INSERT INTO id_alloc (name, next) VALUES ('links', 1000)
           ON CONFLICT (name) DO UPDATE SET next = 1000;
         INSERT INTO users (name, password_hash, created_at, updated_at) VALUES ('olga', 'x', 1, 1);",
    )
    .unwrap();
    for (prefix, scopes, _) in OLD_KEYS {
        let hash = Sha256::digest(secret(prefix).as_bytes()).to_vec();
        c.execute(
            "INSERT INTO api_keys (name, prefix, hash, scopes, created_at) VALUES (?1, ?1, ?2, ?3, 1)",
            rusqlite::params![prefix, hash, scopes],
        )
        .unwrap();
    }
}

async fn as_key(
    d: &Daemon,
    prefix: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let key = secret(prefix);
    let (s, _, v) = d.req_with(method, path, &[("x-api-key", &key)], body).await;
    (s, v)
}

#[tokio::test]
async fn a_v11_sqlite_database_moves_into_the_default_team() {
    let dir = tempfile::tempdir().unwrap();
    sqlite_v11(&dir.path().join("shortlink.db"));
    let d = Daemon::start_on_sqlite_in(dir).await;

    let (s, v) = d.req("GET", "/api/v1/teams", None).await;
    assert_eq!(s, 200);
    assert_eq!(v["teams"][0]["name"], "default");
    let default_id = v["teams"][0]["id"].as_i64().unwrap();
    let (s, v) = d.req("GET", "/api/v1/links/old-one", None).await;
    assert_eq!((s, v["team_id"].as_i64()), (200, Some(default_id)));
    let (_, v) = d.req("GET", "/api/v1/users", None).await;
    let olga = &v["users"][0];
    assert_eq!(
        (
            olga["name"].as_str(),
            olga["team"].as_str(),
            olga["role"].as_str()
        ),
        (Some("olga"), Some("default"), Some("admin"))
    );
    let (_, v) = d.req("GET", "/api/v1/keys", None).await;
    for (prefix, _, role) in OLD_KEYS {
        let key = v["keys"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["prefix"] == prefix)
            .unwrap();
        assert_eq!(
            (key["role"].as_str(), key["team_id"].as_i64()),
            (Some(role), Some(default_id)),
            "{prefix}"
        );
    }

    // The old keys keep working within their role, in the default team.
    let (s, _) = as_key(&d, "cccccccccccc", "GET", "/api/v1/links/old-one", None).await;
    assert_eq!(s, 200);
    let body = json!({"url": "https://e.com/new"});
    let (s, _) = as_key(
        &d,
        "cccccccccccc",
        "POST",
        "/api/v1/links",
        Some(body.clone()),
    )
    .await;
    assert_eq!(s, 403);
    let (s, v) = as_key(&d, "bbbbbbbbbbbb", "POST", "/api/v1/links", Some(body)).await;
    assert_eq!((s, v["team_id"].as_i64()), (201, Some(default_id)), "{v}");
    let (s, v) = as_key(&d, "bbbbbbbbbbbb", "GET", "/api/v1/links", None).await;
    assert_eq!((s, v["total"].as_u64()), (200, Some(2)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v4_postgres_database_moves_into_the_default_team() {
    let cluster = testpg::PgCluster::start("teams-migrate");
    let config = {
        let url = cluster.create_db("old");
        shortlinkd::config::Config {
            database: Some(shortlinkd::config::DatabaseUrl::parse(&url).unwrap()),
            database_password_file: Some(cluster.password_file()),
            ..shortlinkd::config::Config::default()
        }
    };
    {
        let pg =
            postgres::open(config.database.as_ref().unwrap(), Some(testpg::PASSWORD), 1).unwrap();
        let c = pg.get().await.unwrap();
        c.batch_execute(
            "CREATE TABLE schema_version (version integer PRIMARY KEY, \
             applied_at timestamptz NOT NULL DEFAULT now())",
        )
        .await
        .unwrap();
        for (i, sql) in migrate::MIGRATIONS[..4].iter().enumerate() {
            c.batch_execute(sql).await.unwrap();
            let v = i as i32 + 1;
            c.execute("INSERT INTO schema_version (version) VALUES ($1)", &[&v])
                .await
                .unwrap();
        }
        c.batch_execute(
            "INSERT INTO links (id, alias, url, created_at, updated_at) VALUES (1, 'old-one', 'https://e.com/old', 1, 1);
             INSERT INTO users (name, password_hash, created_at, updated_at) VALUES ('olga', 'x', 1, 1);",
        )
        .await
        .unwrap();
        for (prefix, scopes, _) in OLD_KEYS {
            c.execute(
                "INSERT INTO api_keys (name, prefix, hash, scopes, created_at) VALUES ($1, $1, $2, $3, 1)",
                &[&prefix, &vec![1u8], &scopes],
            )
            .await
            .unwrap();
        }
    }
    let key = DeploymentKey::from_bytes([5; 32]);
    let store = shortlinkd::store::postgres::backend::PgStore::open(&config, &key)
        .await
        .unwrap();
    let store = Store::new(std::sync::Arc::new(store));
    let teams = store.list_teams().await.unwrap();
    assert_eq!(teams.len(), 1);
    assert_eq!((teams[0].id, teams[0].name.as_str()), (1, "default"));
    let link = store.find_link(CodeRef::Id(1)).await.unwrap().unwrap();
    assert_eq!(link.team_id, 1);
    let page = store
        .list_links(ListQuery {
            limit: 10,
            team: Some(1),
            ..ListQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(page.total, 1);
    let olga = store.user_by_name("olga".into()).await.unwrap().unwrap();
    assert_eq!((olga.team_id, olga.role), (1, Role::Admin));
    for (prefix, _, role) in OLD_KEYS {
        let k = store.key_by_prefix(prefix.into()).await.unwrap().unwrap();
        assert_eq!(
            (k.team_id, k.role, k.user_id),
            (1, Role::parse(role).unwrap(), None),
            "{prefix}"
        );
    }
    // A new team's ids start after the default one.
    let sales = store.add_team("sales".into(), 2).await.unwrap();
    assert!(sales.id > 1);
    store.close();
}
