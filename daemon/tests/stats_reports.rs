//! The reports a marketer expects, through the API and the CLI: a
//! campaign's (a tag's) totals and series, clicks without a referrer as
//! `direct`, day buckets in a time zone (`tz`, an unknown one refused
//! naming it), and the admin dashboard filtered by tag. On SQLite and,
//! under with-pg, PostgreSQL.

mod common;

use common::admin::{send, sign_in};
use common::{stderr, stdout, Daemon};
use serde_json::{json, Value};
use shortlink_core::country::UNKNOWN;
use shortlink_core::device::DeviceClass;
use shortlink_core::ipc::{BatchId, ClickBatch, ClickCount};

const DAY: i64 = 86_400;
/// Tokyo is 9 hours ahead of UTC all year.
const TOKYO: i64 = 9 * 3600;

/// Midnight (UTC) three days ago: the day `D` of the zone tests.
fn day_d() -> i64 {
    let now = shortlinkd::timestamp::unix_now();
    now - now.rem_euclid(DAY) - 3 * DAY
}

/// The stored hour holding `t`.
fn hour(t: i64) -> u32 {
    (t / 3600) as u32
}

fn click(link_id: u64, hour: u32, referrer: Option<&str>, count: u32) -> ClickCount {
    ClickCount {
        link_id,
        hour,
        device: DeviceClass::Desktop,
        bot: false,
        referrer: referrer.map(str::to_string),
        count,
        country: UNKNOWN,
        variant: 0,
    }
}

/// Three links, two tagged `spring`, made ten days ago (clicks from
/// before a link was made are not counted), and clicks on each.
async fn campaign(d: &Daemon) -> (u64, u64, u64) {
    let made = day_d() - 7 * DAY;
    let file = d.data_dir().join("campaign.csv");
    std::fs::write(
        &file,
        format!(
            "url,alias,tags,created_at\n\
             https://e.com/a,a,spring,{made}\n\
             https://e.com/b,b,\"spring,mail\",{made}\n\
             https://e.com/c,c,autumn,{made}\n"
        ),
    )
    .unwrap();
    let out = d.cli(&["import", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut ids = Vec::new();
    for alias in ["a", "b", "c"] {
        let (_, l) = d.req("GET", &format!("/api/v1/links/{alias}"), None).await;
        ids.push(l["id"].as_u64().unwrap());
    }
    let (a, b, c) = (ids[0], ids[1], ids[2]);
    let now = (shortlinkd::timestamp::unix_now() / 3600) as u32;
    let mut ipc = d.ipc().await;
    ipc.clicks(
        1,
        ClickBatch {
            batch_id: BatchId([0x41; 16]),
            clicks: vec![
                click(a, now, None, 3),
                click(a, now, Some("news.example.com"), 1),
                click(b, now, None, 2),
                click(c, now, None, 7),
                // The first hour of day D in Tokyo, still D - 1 in UTC,
                // and the hour before it, D - 1 in both.
                click(a, hour(day_d() - TOKYO), None, 5),
                click(a, hour(day_d() - TOKYO - 3600), None, 1),
            ],
        },
    )
    .await;
    (a, b, c)
}

/// `(bucket start in Unix seconds, clicks)` of a reply's series.
fn day_counts(v: &Value) -> Vec<(i64, i64)> {
    let secs = |t: &str| {
        time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339)
            .unwrap()
            .unix_timestamp()
    };
    v["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                secs(p["t"].as_str().unwrap()),
                p["clicks"].as_i64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_tag_is_a_campaign_and_no_referrer_is_direct() {
    let d = Daemon::start().await;
    campaign(&d).await;
    let (s, all) = d.req("GET", "/api/v1/stats", None).await;
    assert_eq!((s, &all["total"]), (200, &json!(19)), "{all}");
    assert_eq!(all["tag"], Value::Null);
    let (s, spring) = d.req("GET", "/api/v1/stats?tag=spring", None).await;
    assert_eq!(s, 200, "{spring}");
    assert_eq!(spring["tag"], "spring");
    assert_eq!(spring["total"], 12);
    let codes: Vec<&str> = spring["top_links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["a", "b"]);
    let series: i64 = day_counts(&spring).iter().map(|(_, n)| n).sum();
    assert_eq!(series, 12, "the series adds up to the total");
    let (_, mail) = d.req("GET", "/api/v1/stats?tag=mail", None).await;
    assert_eq!(mail["total"], 2);
    let (_, none) = d.req("GET", "/api/v1/stats?tag=nobody", None).await;
    assert_eq!(none["total"], 0);
    let (s, bad) = d.req("GET", "/api/v1/stats?tag=a%7Cb", None).await;
    assert_eq!(
        (s, bad["error"]["field"].as_str()),
        (422, Some("tag")),
        "{bad}"
    );

    // Clicks without a referrer are "direct", most first.
    let (_, st) = d.req("GET", "/api/v1/links/a/stats", None).await;
    assert_eq!(
        st["referrers"],
        json!([{"host": "direct", "clicks": 9}, {"host": "news.example.com", "clicks": 1}])
    );

    // The CLI's campaign report, with shares adding up to 100.
    let out = d.cli(&["stats", "--tag", "spring"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(text.contains("tag:         spring"), "{text}");
    assert!(text.contains("clicks:      12 (0 bots)"), "{text}");
    assert!(
        text.contains("10   83%  a") && text.contains("2   17%  b"),
        "{text}"
    );
    let text = stdout(&d.cli(&["stats", "a"]));
    assert!(
        text.contains("9   90%  direct") && text.contains("1   10%  news"),
        "{text}"
    );

    // The dashboard filtered by tag.
    let admin = sign_in(&d).await;
    let (s, _, page) = send(
        &d,
        "GET",
        "/admin/dashboard?tag=mail",
        &[("cookie", &admin.cookie)],
        None,
    )
    .await;
    assert_eq!(s, 200);
    let page = page.as_str().unwrap();
    assert!(page.contains("id=\"dash-30d\">2<"), "{page}");
    assert!(page.contains("id=\"dash-tag-note\""), "{page}");
    let (_, _, page) = send(
        &d,
        "GET",
        "/admin/dashboard",
        &[("cookie", &admin.cookie)],
        None,
    )
    .await;
    assert!(
        page.as_str().unwrap().contains("id=\"dash-30d\">19<"),
        "{page}"
    );
}

#[tokio::test]
async fn day_buckets_follow_the_time_zone() {
    let d = Daemon::start().await;
    campaign(&d).await;
    // Days D - 1 and D, midnight to midnight in Tokyo.
    let (from, to) = (day_d() - DAY - TOKYO, day_d() + DAY - TOKYO);
    let range = format!("from={from}&to={to}&granularity=day");
    let (s, tokyo) = d
        .req(
            "GET",
            &format!("/api/v1/links/a/stats?{range}&tz=Asia/Tokyo"),
            None,
        )
        .await;
    assert_eq!(s, 200, "{tokyo}");
    assert_eq!(tokyo["tz"], "Asia/Tokyo");
    assert_eq!(day_counts(&tokyo), [(from, 1), (from + DAY, 5)], "{tokyo}");
    assert_eq!(tokyo["total"], 6);
    // In UTC the same clicks are all on D - 1.
    let (_, utc) = d
        .req("GET", &format!("/api/v1/links/a/stats?{range}"), None)
        .await;
    assert_eq!(utc["tz"], "UTC");
    assert_eq!(
        day_counts(&utc),
        [(day_d() - 2 * DAY, 0), (day_d() - DAY, 6), (day_d(), 0)]
    );
    // Site-wide and per tag alike.
    let (s, site) = d
        .req(
            "GET",
            &format!("/api/v1/stats?{range}&tz=Asia/Tokyo&tag=spring"),
            None,
        )
        .await;
    assert_eq!(s, 200, "{site}");
    assert_eq!(day_counts(&site), day_counts(&tokyo));
    // An unknown zone is refused, naming `tz`.
    for path in [
        "/api/v1/stats?tz=Europe/Pariss",
        "/api/v1/links/a/stats?tz=Mars",
    ] {
        let (s, v) = d.req("GET", path, None).await;
        assert_eq!((s, v["error"]["field"].as_str()), (422, Some("tz")), "{v}");
        assert_eq!(v["error"]["code"], "invalid_tz");
    }
    // An empty range end or bucket size is no default in disguise.
    for (path, field) in [
        ("/api/v1/stats?to=", "to"),
        ("/api/v1/links/a/stats?from=", "from"),
        ("/api/v1/stats?granularity=", "granularity"),
    ] {
        let (s, v) = d.req("GET", path, None).await;
        assert_eq!((s, v["error"]["field"].as_str()), (400, Some(field)), "{v}");
    }
    let out = d.cli(&["stats", "a", "--tz", "Nowhere/Else"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("Nowhere/Else"), "{}", stderr(&out));
}
