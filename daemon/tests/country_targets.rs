//! A link's country targets through the API: codes normalised to upper
//! case, unknown codes, too many entries and bad URLs refused with the
//! field and the reason, replaced and removed by an edit.

mod common;

use common::Daemon;
use serde_json::json;

#[tokio::test]
async fn country_targets_are_checked_stored_and_replaced() {
    let d = Daemon::start().await;
    let (s, v) = d
        .req(
            "POST",
            "/api/v1/links",
            Some(json!({"url": "https://e.com/", "alias": "ct",
                "country_targets": {"de": "https://e.de/", "FR": "https://e.fr/"}})),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(
        v["country_targets"],
        json!({"DE": "https://e.de/", "FR": "https://e.fr/"})
    );
    let (_, got) = d.req("GET", "/api/v1/links/ct", None).await;
    assert_eq!(got["country_targets"], v["country_targets"]);
    let refused = |body: serde_json::Value, code: &'static str, says: &'static str| {
        let d = &d;
        async move {
            let (s, v) = d.req("POST", "/api/v1/links", Some(body)).await;
            assert_eq!(s, 422, "{v}");
            let text = v.to_string();
            assert!(text.contains(code), "{text}");
            assert!(text.contains(says), "{text}");
        }
    };
    refused(
        json!({"url": "https://e.com/", "country_targets": {"ZZ": "https://e.de/"}}),
        "invalid_country",
        "\\\"ZZ\\\" is not an assigned",
    )
    .await;
    refused(
        json!({"url": "https://e.com/", "country_targets": {"DEU": "https://e.de/"}}),
        "invalid_country",
        "not two letters",
    )
    .await;
    refused(
        json!({"url": "https://e.com/", "country_targets": {"DE": "ftp://e.de/"}}),
        "invalid_url",
        "the target for DE",
    )
    .await;
    refused(
        json!({"url": "https://e.com/", "country_targets": {"DE": "https://e.de/", "de": "https://x.de/"}}),
        "invalid_country",
        "given twice",
    )
    .await;
    let many: serde_json::Map<String, serde_json::Value> = [
        "AD", "AE", "AF", "AG", "AI", "AL", "AM", "AO", "AQ", "AR", "AS", "AT", "AU", "AW", "AX",
        "AZ", "BA",
    ]
    .iter()
    .map(|c| (c.to_string(), json!("https://e.com/x")))
    .collect();
    refused(
        json!({"url": "https://e.com/", "country_targets": many}),
        "too_many_country_targets",
        "more than the maximum of 16",
    )
    .await;
    // An edit replaces them; null removes them.
    let (s, v) = d
        .req(
            "PATCH",
            "/api/v1/links/ct",
            Some(json!({"country_targets": {"jp": "https://e.jp/"}})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["country_targets"], json!({"JP": "https://e.jp/"}));
    let (s, v) = d
        .req(
            "PATCH",
            "/api/v1/links/ct",
            Some(json!({"country_targets": null})),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["country_targets"], json!({}));
}
