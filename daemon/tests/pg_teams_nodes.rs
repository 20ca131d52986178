//! Teams across two real daemons on one private PostgreSQL: a link made
//! through one node belongs to its creator's team on the other, and a user
//! removed on one node loses access through the other within the auth
//! cache's lifetime (30 s), the bound the README states.

mod common;

use std::time::{Duration, Instant};

use common::{eventually, Daemon};
use serde_json::json;
use testpg::PgCluster;

/// The auth cache's lifetime (`auth/cache.rs`) and some slack for a
/// loaded machine.
const BOUND: Duration = Duration::from_secs(35);

async fn node(cluster: &PgCluster, url: &str) -> Daemon {
    common::on_cluster(cluster, url, &[]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_member_loses_access_on_every_node_within_the_cache_lifetime() {
    let cluster = PgCluster::start("teams-nodes");
    let url = cluster.create_db("teams");
    let a = node(&cluster, &url).await;
    let b = node(&cluster, &url).await;
    for name in ["alpha", "beta"] {
        let (s, _) = a
            .req("POST", "/api/v1/teams", Some(json!({"name": name})))
            .await;
        assert_eq!(s, 201);
    }
    let body = json!({"name": "ann", "password": "correct horse battery", "team": "alpha", "role": "member"});
    assert_eq!(a.req("POST", "/api/v1/users", Some(body)).await.0, 201);
    let body = json!({"name": "ann-ci", "scopes": ["links:write", "links:read"], "user": "ann"});
    let (s, v) = a.req("POST", "/api/v1/keys", Some(body)).await;
    assert_eq!(s, 201);
    let key = v["secret"].as_str().unwrap().to_string();
    let (s, v) = a
        .req(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://e.com/adm", "alias": "adm-link"})),
        )
        .await;
    assert_eq!(s, 201, "{v}");

    // Through node b: ann's link lands in alpha; she sees only alpha's.
    let body = Some(json!({"url": "https://e.com/ann", "alias": "ann-link"}));
    let (s, _, v) = b
        .req_with("POST", "/api/v1/links", &[("x-api-key", &key)], body)
        .await;
    assert_eq!(s, 201, "{v}");
    let (_, v) = a.req("GET", "/api/v1/links/ann-link", None).await;
    let (_, teams) = a.req("GET", "/api/v1/teams", None).await;
    let alpha = teams["teams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "alpha")
        .unwrap()["id"]
        .clone();
    assert_eq!(v["team_id"], alpha);
    let (_, _, page) = b
        .req_with("GET", "/api/v1/links", &[("x-api-key", &key)], None)
        .await;
    assert_eq!(page["total"].as_u64(), Some(1));
    let (s, _, _) = b
        .req_with(
            "GET",
            "/api/v1/links/adm-link",
            &[("x-api-key", &key)],
            None,
        )
        .await;
    assert_eq!(s, 404);

    // Removed on node a: node b (which holds the key in its cache) refuses
    // it within the cache's lifetime.
    let removed = Instant::now();
    assert_eq!(a.req("DELETE", "/api/v1/users/ann", None).await.0, 204);
    let (s, _, _) = a
        .req_with("GET", "/api/v1/links", &[("x-api-key", &key)], None)
        .await;
    assert_eq!(s, 401, "at once on the node that removed her");
    let refused = eventually(BOUND, || async {
        b.req_with("GET", "/api/v1/links", &[("x-api-key", &key)], None)
            .await
            .0
            == 401
    })
    .await;
    assert!(
        refused,
        "node b still accepts the key after {:?}",
        removed.elapsed()
    );
}
