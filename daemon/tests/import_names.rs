//! Export and import lose nothing (on SQLite and, under with-pg,
//! PostgreSQL): renewal, expired links, team and creator come across; an
//! old short name keeps reaching its link whatever form it has here: a
//! code-shaped alias becomes the link's code (later creates never take its
//! id), another deployment's code becomes the alias, a name in the other
//! version slot stays an alias.

mod common;

use common::{stderr, stdout, Daemon};
use serde_json::{json, Value};
use shortlink_core::{Codec, DeploymentKey};

fn ok(d: &Daemon, args: &[&str]) -> String {
    let out = d.cli(args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

/// Imports `csv` with the CLI; its stderr summary.
fn import(d: &Daemon, csv: &str) -> String {
    let file = d.data_dir().join("in.csv");
    std::fs::write(&file, csv).unwrap();
    let out = d.cli(&["import", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    stderr(&out)
}

async fn link(d: &Daemon, name: &str) -> Value {
    let (s, v) = d.req("GET", &format!("/api/v1/links/{name}"), None).await;
    assert_eq!(s, 200, "{name}: {v}");
    v
}

fn team_id(d: &Daemon, name: &str) -> i64 {
    let list = ok(d, &["--json", "team", "list"]);
    let v: Value = serde_json::from_str(&list).unwrap();
    v["teams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} in {list}"))["id"]
        .as_i64()
        .unwrap()
}

#[tokio::test]
async fn renewal_expired_links_team_and_creator_survive_a_round_trip() {
    let a = Daemon::start().await;
    ok(&a, &["team", "create", "sales"]);
    let summary = import(
        &a,
        "url,alias,expires_at,renew_on_access,team,creator\n\
         https://e.com/renew,renews,2099-01-01T00:00:00Z,3600,sales,alice\n\
         https://e.com/old,old-one,2020-01-01T00:00:00Z,,,\n",
    );
    assert!(summary.contains("2 imported"), "{summary}");
    let renews = link(&a, "renews").await;
    assert_eq!(renews["renew_ttl"], 3600, "{renews}");
    assert_eq!(renews["team_id"], team_id(&a, "sales"), "{renews}");
    assert_eq!(renews["created_by"], "alice", "{renews}");
    assert_eq!(link(&a, "old-one").await["state"], "expired");

    let csv = ok(&a, &["export", "-"]);
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .ends_with("renew_on_access,team,creator"),
        "{csv}"
    );

    // Another deployment, its teams made in another order.
    let b = Daemon::start().await;
    ok(&b, &["team", "create", "ops"]);
    ok(&b, &["team", "create", "sales"]);
    let summary = import(&b, &csv);
    assert!(summary.contains("2 imported"), "{summary}");
    let renews = link(&b, "renews").await;
    assert_eq!(renews["renew_ttl"], 3600, "{renews}");
    assert_eq!(renews["expires_at"], "2099-01-01T00:00:00Z", "{renews}");
    assert_eq!(renews["team_id"], team_id(&b, "sales"), "{renews}");
    assert_eq!(renews["created_by"], "alice", "{renews}");
    let old = link(&b, "old-one").await;
    assert_eq!(old["state"], "expired", "{old}");
    assert_eq!(old["expires_at"], "2020-01-01T00:00:00Z", "{old}");

    // A team the file names but this deployment lacks: the importer's.
    let c = Daemon::start().await;
    let summary = import(&c, &csv);
    assert!(summary.contains("in your team"), "{summary}");
    assert_eq!(link(&c, "renews").await["team_id"], team_id(&c, "default"));

    // (A member's import, from the admin UI, places nothing in another
    // team: links::import::tests.)
}

/// A name only the other version slot of `codec`'s check would take for
/// a code.
fn loose_name(codec: &Codec) -> String {
    (0u64..)
        .map(|i| format!("Zq{i:03}"))
        .find(|n| codec.decode(n.as_bytes()).is_err() && codec.could_be_code(n.as_bytes()))
        .unwrap()
}

#[tokio::test]
async fn old_short_names_keep_reaching_their_links_in_any_form() {
    // Short codes, so a kept code's id lies where the allocator goes next.
    let d = Daemon::start_with(&["--min-length", "3", "--segment-size", "20"]).await;
    let codec = d.codec();
    // A name that is one of our codes, a little past the first id.
    let code_shaped = codec
        .encode(Codec::first_id_of_length(3) + 30)
        .as_str()
        .to_string();
    let loose = loose_name(&codec);
    // Another deployment's generated code (its key is not ours).
    let theirs = Codec::new(&DeploymentKey::from_bytes([9; 32]));
    let foreign = (1000u64..)
        .map(|id| theirs.encode(id).as_str().to_string())
        .find(|c| !codec.could_be_code(c.as_bytes()))
        .unwrap();
    let csv = format!(
        "code,url,alias\n\
         ,https://e.com/code-shaped,{code_shaped}\n\
         ,https://e.com/loose,{loose}\n\
         {foreign},https://e.com/foreign,\n"
    );
    let summary = import(&d, &csv);
    assert!(summary.contains("3 imported"), "{summary}");
    assert!(summary.contains("keep their old short URL"), "{summary}");
    for (name, url) in [
        (&code_shaped, "https://e.com/code-shaped"),
        (&loose, "https://e.com/loose"),
        (&foreign, "https://e.com/foreign"),
    ] {
        assert_eq!(link(&d, name).await["url"], url, "{name}");
    }
    let kept = link(&d, &code_shaped).await;
    assert_eq!(kept["generated_code"], code_shaped.as_str(), "{kept}");
    assert_eq!(link(&d, &foreign).await["alias"], foreign.as_str());
    // Every 3-character id from here on: none is the kept one's.
    let kept_id = kept["id"].as_u64().unwrap();
    let last = Codec::first_id_of_length(4);
    let mut made = 0;
    loop {
        let (s, v) = d
            .req(
                "POST",
                "/api/v1/links",
                Some(json!({"url": format!("https://e.com/n{made}")})),
            )
            .await;
        assert_eq!(s, 201, "create {made}: {v}");
        made += 1;
        let id = v["id"].as_u64().unwrap();
        assert_ne!(id, kept_id);
        if id > kept_id || id >= last {
            break;
        }
    }
    assert_eq!(
        link(&d, &code_shaped).await["url"],
        "https://e.com/code-shaped"
    );
}
