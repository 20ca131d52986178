//! `CredentialStore` and `UserStore` of `PgStore` on a real PostgreSQL:
//! API keys, apps with sealed secrets, signatures refused as replays on
//! every node, credential uses and admin users.

mod pg_common;

use pg_common::config_for;
use shortlink_core::DeploymentKey;
use shortlinkd::access::Role;
use shortlinkd::store::postgres::backend::PgStore;
use shortlinkd::store::{CredentialStore, Owner, StoreError, UserStore};
use testpg::PgCluster;

const SECRET: &str = "5ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7e75ec7";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_and_users_behave_as_on_sqlite() {
    let cluster = PgCluster::start("creds");
    let config = config_for(&cluster, "creds");
    let key = DeploymentKey::from_bytes([3; 32]);
    let a = PgStore::open(&config, &key).await.unwrap();
    let b = PgStore::open(&config, &key).await.unwrap();

    // API keys: created, found by prefix, listed, revoked, expiry kept.
    let k1 = a
        .create_key(
            "ci".into(),
            "abc123".into(),
            vec![1, 2],
            "links:read".into(),
            10,
            None,
            Owner::of_team(1, Role::Member),
        )
        .await
        .unwrap();
    let k2 = a
        .create_key(
            "tmp".into(),
            "def456".into(),
            vec![3],
            "*".into(),
            11,
            Some(500),
            Owner::of_team(1, Role::Member),
        )
        .await
        .unwrap();
    let found = b.key_by_prefix("abc123".into()).await.unwrap().unwrap();
    assert_eq!(
        (found.id, found.name.as_str(), found.hash.as_slice()),
        (k1, "ci", &[1u8, 2][..])
    );
    assert_eq!(
        (found.created_at, found.revoked_at, found.expires_at),
        (10, None, None)
    );
    let expiring = b.key_by_prefix("def456".into()).await.unwrap().unwrap();
    assert_eq!(expiring.expires_at, Some(500));
    assert!(b.key_by_prefix("nope".into()).await.unwrap().is_none());
    let err = a
        .create_key(
            "dup".into(),
            "abc123".into(),
            vec![9],
            "*".into(),
            12,
            None,
            Owner::of_team(1, Role::Member),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Conflict(m) if m.contains("abc123")),
        "{err:?}"
    );
    let listed: Vec<i64> = a.list_keys().await.unwrap().iter().map(|k| k.id).collect();
    assert_eq!(listed, [k1, k2]);
    assert_eq!(b.revoke_key(k1, 20).await.unwrap().revoked_at, Some(20));
    // Revoking again keeps the first time.
    assert_eq!(a.revoke_key(k1, 30).await.unwrap().revoked_at, Some(20));
    let revoked = a.key_by_prefix("abc123".into()).await.unwrap().unwrap();
    assert_eq!(revoked.revoked_at, Some(20));
    assert!(matches!(
        a.revoke_key(999, 1).await,
        Err(StoreError::NotFound(_))
    ));

    // Apps: the secret is sealed in the table and opened on read.
    let app = a
        .create_app(
            "app_1".into(),
            "bot".into(),
            SECRET.into(),
            "links:write".into(),
            40,
            Owner::of_team(1, Role::Member),
        )
        .await
        .unwrap();
    let stored = cluster.psql("creds", "SELECT secret FROM apps WHERE app_id = 'app_1'");
    assert!(stored.trim().starts_with("sealed1:"), "{stored}");
    assert!(!stored.contains(SECRET), "secret stored in clear: {stored}");
    let dump = cluster.psql("creds", "SELECT string_agg(apps::text, ' ') FROM apps");
    assert!(!dump.contains(SECRET), "{dump}");
    let opened = b.app_by_app_id("app_1".into()).await.unwrap().unwrap();
    assert_eq!((opened.id, opened.secret.as_str()), (app, SECRET));
    assert_eq!(
        (opened.name.as_str(), opened.scopes.as_str()),
        ("bot", "links:write")
    );
    assert!(b.app_by_app_id("app_2".into()).await.unwrap().is_none());
    let listed = a.list_apps().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].secret, "", "listing hands out no secret");
    let dup = a
        .create_app(
            "app_1".into(),
            "again".into(),
            SECRET.into(),
            "*".into(),
            41,
            Owner::of_team(1, Role::Member),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&dup, StoreError::Conflict(m) if m.contains("app_1")),
        "{dup:?}"
    );
    // Moved to another app's row, a sealed secret does not open.
    a.create_app(
        "app_2".into(),
        "other".into(),
        "x".into(),
        "*".into(),
        42,
        Owner::of_team(1, Role::Member),
    )
    .await
    .unwrap();
    cluster.psql(
        "creds",
        "UPDATE apps SET secret = (SELECT secret FROM apps WHERE app_id = 'app_1') \
         WHERE app_id = 'app_2'",
    );
    let moved = a
        .app_by_app_id("app_2".into())
        .await
        .unwrap_err()
        .to_string();
    assert!(moved.contains("does not open"), "{moved}");
    // Revoked by number or public id; unknown is NotFound.
    assert_eq!(
        b.revoke_app(app.to_string(), 50).await.unwrap().revoked_at,
        Some(50)
    );
    assert_eq!(
        a.revoke_app("app_1".into(), 60).await.unwrap().revoked_at,
        Some(50)
    );
    assert!(matches!(
        a.revoke_app("app_9".into(), 1).await,
        Err(StoreError::NotFound(_))
    ));

    // Under another key the database does not open at all, and a store
    // whose seal differs cannot open the secret either.
    let other = DeploymentKey::from_bytes([4; 32]);
    assert!(PgStore::open(&config, &other).await.is_err());
    let fingerprint = cluster.psql("creds", "SELECT key_fingerprint FROM store_meta");
    cluster.psql(
        "creds",
        &format!(
            "UPDATE store_meta SET key_fingerprint = '{}'",
            other.fingerprint()
        ),
    );
    let c = PgStore::open(&config, &other).await.unwrap();
    let e = c
        .app_by_app_id("app_1".into())
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not open with this deployment key"), "{e}");
    assert_eq!(
        c.list_apps().await.unwrap().len(),
        2,
        "listing needs no secret"
    );
    cluster.psql(
        "creds",
        &format!(
            "UPDATE store_meta SET key_fingerprint = '{}'",
            fingerprint.trim()
        ),
    );

    // A signature is recorded once across both nodes.
    assert!(a.record_signature("sig-1".into(), 100).await.unwrap());
    assert!(!b.record_signature("sig-1".into(), 100).await.unwrap());
    assert!(!a.record_signature("sig-1".into(), 101).await.unwrap());
    assert!(b.record_signature("sig-2".into(), 90).await.unwrap());
    assert_eq!(
        a.recent_signatures(95).await.unwrap(),
        [("sig-1".to_string(), 100)]
    );

    // Credential uses: the latest time wins, whichever node records it.
    a.record_credential_use("key".into(), "abc123".into(), 200)
        .await
        .unwrap();
    b.record_credential_use("key".into(), "abc123".into(), 150)
        .await
        .unwrap();
    b.record_credential_use("app".into(), "app_1".into(), 300)
        .await
        .unwrap();
    let mut uses = a.credential_uses().await.unwrap();
    uses.sort();
    assert_eq!(
        uses,
        [
            ("app".to_string(), "app_1".to_string(), 300),
            ("key".to_string(), "abc123".to_string(), 200)
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_add_conflict_change_password_list_and_delete() {
    let cluster = PgCluster::start("users");
    let config = config_for(&cluster, "users");
    let key = DeploymentKey::from_bytes([5; 32]);
    let a = PgStore::open(&config, &key).await.unwrap();
    let b = PgStore::open(&config, &key).await.unwrap();
    let zed = a
        .add_user("zed".into(), "h1".into(), 10, 1, Role::Admin)
        .await
        .unwrap();
    let amy = b
        .add_user("amy".into(), "h2".into(), 11, 1, Role::Admin)
        .await
        .unwrap();
    b.add_user("Bob".into(), "h3".into(), 12, 1, Role::Admin)
        .await
        .unwrap();
    let err = b
        .add_user("zed".into(), "h4".into(), 13, 1, Role::Admin)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Conflict(m) if m.contains("zed")),
        "{err:?}"
    );
    // Byte order, as SQLite sorts: upper case first.
    let names: Vec<String> = a
        .list_users()
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.name)
        .collect();
    assert_eq!(names, ["Bob", "amy", "zed"]);
    b.set_user_password("zed".into(), "h5".into(), 20)
        .await
        .unwrap();
    let z = a.user_by_name("zed".into()).await.unwrap().unwrap();
    assert_eq!(
        (z.id, z.password_hash.as_str(), z.created_at, z.updated_at),
        (zed, "h5", 10, 20)
    );
    assert!(matches!(
        a.set_user_password("nobody".into(), "h".into(), 1).await,
        Err(StoreError::NotFound(_))
    ));
    a.delete_user("amy".into(), 50).await.unwrap();
    assert!(b.user_by_name("amy".into()).await.unwrap().is_none());
    assert!(matches!(
        b.delete_user("amy".into(), 50).await,
        Err(StoreError::NotFound(_))
    ));
    assert_ne!(amy, zed);
    assert_eq!(a.list_users().await.unwrap().len(), 2);
}
