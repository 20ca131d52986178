//! Connecting, migrating from several daemons at once, the schema's rules,
//! and the store identity's key check, on a real PostgreSQL.

mod pg_common;

use std::os::unix::fs::PermissionsExt;

use pg_common::{add_link, config_for, migrated};
use shortlink_core::DeploymentKey;
use shortlinkd::store::postgres::{self, identity, migrate, PgError};
use testpg::PgCluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn daemons_starting_at_once_migrate_once_and_agree() {
    let cluster = PgCluster::start("schema");
    let config = config_for(&cluster, "race");
    // Eight daemons start together: each runs the migration; one applies
    // it. Their connections are open first (a login takes long enough to
    // stagger them), then all are let go at once.
    let gate = std::sync::Arc::new(tokio::sync::Barrier::new(8));
    let starts: Vec<_> = (0..8)
        .map(|_| {
            let (config, gate) = (config.clone(), gate.clone());
            tokio::spawn(async move {
                let pg =
                    postgres::open(config.database.as_ref().unwrap(), Some(testpg::PASSWORD), 2)
                        .unwrap();
                drop(pg.get().await.unwrap());
                gate.wait().await;
                migrate::run(&pg).await
            })
        })
        .collect();
    let mut applied = Vec::new();
    for s in starts {
        applied.extend(s.await.unwrap().unwrap());
    }
    assert_eq!(applied, (1..=migrate::newest()).collect::<Vec<_>>());
    let versions = cluster.psql(
        "race",
        "SELECT string_agg(version::text, ',') FROM schema_version",
    );
    let all: Vec<String> = (1..=migrate::newest()).map(|v| v.to_string()).collect();
    assert_eq!(versions, all.join(","));
    // And once more through connect, as a restarting daemon would.
    let pg = postgres::connect(&config).await.unwrap();
    assert!(migrate::run(&pg).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schema_keeps_the_sqlite_rules() {
    let cluster = PgCluster::start("rules");
    let pg = migrated(&cluster, "rules").await;
    add_link(&pg, 1, Some("promo"), None).await;
    let client = pg.get().await.unwrap();
    let err = client
        .execute(
            "INSERT INTO links (id, alias, url, created_at, updated_at) VALUES (2, 'promo', 'u', 0, 0)",
            &[],
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.as_db_error().unwrap().constraint(),
        Some("links_alias_key")
    );
    for (table, unique) in [
        ("api_keys", "api_keys_prefix_key"),
        ("apps", "apps_app_id_key"),
        ("users", "users_name_key"),
    ] {
        let n = cluster.psql(
            "rules",
            &format!("SELECT count(*) FROM pg_indexes WHERE tablename = '{table}' AND indexname = '{unique}'"),
        );
        assert_eq!(n, "1", "{table}");
    }
    for index in [
        "links_dedupe",
        "clicks_by_hour",
        "click_batches_seen",
        "edge_changes_version",
        "edge_changes_unversioned",
    ] {
        let n = cluster.psql(
            "rules",
            &format!("SELECT count(*) FROM pg_indexes WHERE indexname = '{index}'"),
        );
        assert_eq!(n, "1", "{index}");
    }
    // A logged click batch is stored as it is: out of line once large,
    // never compressed (v13), however well it would compress.
    client
        .execute(
            "INSERT INTO click_log (received_at, batch, format) VALUES (0, $1, 3)",
            &[&vec![7u8; 64 * 1024]],
        )
        .await
        .unwrap();
    assert_eq!(
        cluster.psql(
            "rules",
            "SELECT coalesce(pg_column_compression(batch), 'none') || ' ' || pg_column_size(batch) \
             FROM click_log"
        ),
        "none 65536"
    );
    // Clicks go with their link.
    client
        .execute(
            "INSERT INTO clicks (link_id, hour, device, bot, referrer, count) VALUES (1, 5, 1, false, '', 3)",
            &[],
        )
        .await
        .unwrap();
    client
        .execute("DELETE FROM links WHERE id = 1", &[])
        .await
        .unwrap();
    assert_eq!(cluster.psql("rules", "SELECT count(*) FROM clicks"), "0");
    // App secrets are stored sealed only.
    let err = client
        .execute(
            "INSERT INTO apps (app_id, name, secret, scopes, created_at) VALUES ('a', 'n', 'clear', 's', 0)",
            &[],
        )
        .await
        .unwrap_err();
    assert!(
        err.as_db_error()
            .unwrap()
            .message()
            .contains("apps_secret_check"),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_created_under_another_key_is_refused_naming_both() {
    let cluster = PgCluster::start("identity");
    let pg = migrated(&cluster, "ident").await;
    let (a, b) = (
        DeploymentKey::generate().unwrap(),
        DeploymentKey::generate().unwrap(),
    );
    let first = identity::claim(&pg, a.fingerprint()).await.unwrap();
    assert_eq!(first.fingerprint, a.fingerprint().to_string());
    // Another node with the same key: the same store.
    let again = identity::claim(&pg, a.fingerprint()).await.unwrap();
    assert_eq!(again, first);
    let err = identity::claim(&pg, b.fingerprint()).await.unwrap_err();
    assert!(matches!(err, PgError::KeyMismatch { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains(&a.fingerprint().to_string())
            && message.contains(&b.fingerprint().to_string()),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_or_missing_or_open_file_is_named_without_the_password() {
    let cluster = PgCluster::start("login");
    let mut config = config_for(&cluster, "login");
    let dir = tempfile::tempdir().unwrap();
    let wrong = dir.path().join("pw");
    std::fs::write(&wrong, "not-the-password\n").unwrap();
    // Readable by everyone: refused before it is read, naming the mode.
    std::fs::set_permissions(&wrong, std::fs::Permissions::from_mode(0o644)).unwrap();
    config.database_password_file = Some(wrong.clone());
    let err = postgres::connect(&config).await.unwrap_err().to_string();
    assert!(
        err.contains("readable by other users (mode 644)") && err.contains("pw"),
        "{err}"
    );
    std::fs::set_permissions(&wrong, std::fs::Permissions::from_mode(0o640)).unwrap();
    let err = postgres::connect(&config).await.unwrap_err().to_string();
    assert!(err.contains("password authentication failed"), "{err}");
    assert!(
        err.contains(&format!("127.0.0.1:{}", cluster.port)),
        "{err}"
    );
    assert!(!err.contains("not-the-password"), "{err}");
    config.database_password_file = Some(dir.path().join("absent"));
    let err = postgres::connect(&config).await.unwrap_err().to_string();
    assert!(
        err.contains("password file") && err.contains("absent"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unix_socket_directory_as_host_connects() {
    let cluster = PgCluster::start("socket");
    cluster.create_db("sock");
    let dir = cluster
        .socket_dir()
        .display()
        .to_string()
        .replace('/', "%2F");
    let url = format!("postgres://{}@{dir}:{}/sock", testpg::USER, cluster.port);
    let config = shortlinkd::config::Config {
        database: Some(shortlinkd::config::DatabaseUrl::parse(&url).unwrap()),
        database_password_file: Some(cluster.password_file()),
        ..Default::default()
    };
    let pg = postgres::connect(&config).await.unwrap();
    let client = pg.get().await.unwrap();
    let row = client
        .query_one("SELECT inet_client_addr() IS NULL", &[])
        .await
        .unwrap();
    assert!(row.get::<_, bool>(0), "connected over the Unix socket");
}

/// `PgStore::open`: connect, migrate, claim; a second daemon under the same
/// key opens the same store, one under another key is refused.
#[tokio::test]
async fn a_pg_store_opens_under_its_key_only() {
    let cluster = PgCluster::start("pgstore");
    let config = config_for(&cluster, "store");
    let key = DeploymentKey::from_bytes([1; 32]);
    let a = shortlinkd::store::postgres::backend::PgStore::open(&config, &key)
        .await
        .unwrap();
    let b = shortlinkd::store::postgres::backend::PgStore::open(&config, &key)
        .await
        .unwrap();
    assert_eq!(a.identity(), b.identity());
    assert_eq!(a.identity().fingerprint, key.fingerprint().to_string());
    let other = DeploymentKey::from_bytes([2; 32]);
    let err = shortlinkd::store::postgres::backend::PgStore::open(&config, &other)
        .await
        .err()
        .expect("another key is refused")
        .to_string();
    assert!(err.contains(&other.fingerprint().to_string()), "{err}");
}
