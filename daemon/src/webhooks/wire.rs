//! The times of an event's data as the API writes them. Payloads are
//! stored with Unix seconds (old rows too); a receiver, like any API
//! client, gets RFC 3339 in UTC (`crate::timestamp`), so they are rewritten
//! on the way out, in the body sent and in the delivery log.

use serde_json::Value;

use crate::timestamp::Timestamp;

/// The link's fields that are points in time.
const LINK_TIMES: &[&str] = &["created_at", "updated_at", "expires_at"];
/// A click summary's interval.
const SUMMARY_TIMES: &[&str] = &["from", "to"];

/// `data` with every time field (Unix seconds) in RFC 3339; strings and
/// nulls are left as they are.
pub fn with_rfc3339_times(mut data: Value) -> Value {
    if let Some(link) = data.get_mut("link").and_then(Value::as_object_mut) {
        for name in LINK_TIMES {
            if let Some(v) = link.get_mut(*name) {
                rewrite(v);
            }
        }
    }
    if let Some(obj) = data.as_object_mut() {
        for name in SUMMARY_TIMES {
            if let Some(v) = obj.get_mut(*name) {
                rewrite(v);
            }
        }
    }
    data
}

/// Unix seconds to RFC 3339, in place.
fn rewrite(v: &mut Value) {
    if let Some(t) = v.as_i64() {
        *v = Value::String(Timestamp(t).to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unix_seconds_become_rfc3339_and_the_rest_stays() {
        let data = json!({
            "link": {"id": 7, "created_at": 1_700_000_000, "updated_at": "2023-11-14T22:13:20Z",
                     "expires_at": null, "clicks": 3},
            "from": 1_700_000_000, "to": 1_700_000_300, "clicks": 2,
        });
        let out = with_rfc3339_times(data);
        assert_eq!(out["link"]["created_at"], "2023-11-14T22:13:20Z");
        assert_eq!(out["link"]["updated_at"], "2023-11-14T22:13:20Z");
        assert_eq!(out["link"]["expires_at"], Value::Null);
        assert_eq!(out["link"]["clicks"], 3);
        assert_eq!(out["from"], "2023-11-14T22:13:20Z");
        assert_eq!(out["to"], "2023-11-14T22:18:20Z");
        assert_eq!(out["clicks"], 2);
    }
}
