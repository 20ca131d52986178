//! What `shortlink_status` answers: the edge's figures for each zone, as
//! Prometheus text (version 0.0.4) or JSON. The module reads the figures
//! from shared memory ([`ZoneFigures`]); the formats live here, where they
//! are tested.

use std::fmt::Write;

use serde::Serialize;

/// How the edge answered a request, in the order of
/// [`ZoneFigures::requests`]; the values of `$shortlink_cache_status`.
pub const CACHE_STATUSES: [&str; 6] = ["HIT", "MISS", "NEGATIVE", "INVALID", "EXPIRED", "BYPASS"];

/// One zone's figures, summed over every worker that used it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ZoneFigures {
    /// The zone's name (`shortlink_zone NAME`).
    pub name: String,
    /// Requests answered, by cache status ([`CACHE_STATUSES`] order); in
    /// JSON, an object keyed by status.
    #[serde(skip)]
    pub requests: [u64; 6],
    /// Links and negative answers held.
    pub entries: u64,
    /// Bytes of the zone in use and free.
    pub bytes_used: u64,
    pub bytes_free: u64,
    /// Entries evicted to make room.
    pub evictions: u64,
    /// Workers whose daemon link is up, and down.
    pub links_up: u64,
    pub links_down: u64,
    /// Times a worker's daemon link came back after being down.
    pub reconnects: u64,
    /// Lookups sent to the daemon and not answered yet.
    pub lookups_in_flight: u64,
    /// Requests waiting for those lookups' answers (several per lookup
    /// when they ask for one code: single flight).
    pub requests_waiting: u64,
    /// Clicks counted and not yet stored by the daemon (as of each
    /// worker's last flush).
    pub clicks_pending: u64,
    /// Clicks the daemon stored.
    pub clicks_delivered: u64,
    /// Clicks written to spool files.
    pub clicks_spooled: u64,
}

/// One metric family: name, type, help, and how to read its samples.
struct Family {
    name: &'static str,
    kind: &'static str,
    help: &'static str,
    value: fn(&ZoneFigures) -> u64,
}

const FAMILIES: [Family; 12] = [
    Family {
        name: "shortlink_zone_entries",
        kind: "gauge",
        help: "Links and negative answers held in the zone.",
        value: |z| z.entries,
    },
    Family {
        name: "shortlink_zone_bytes_used",
        kind: "gauge",
        help: "Bytes of the zone in use.",
        value: |z| z.bytes_used,
    },
    Family {
        name: "shortlink_zone_bytes_free",
        kind: "gauge",
        help: "Bytes of the zone free.",
        value: |z| z.bytes_free,
    },
    Family {
        name: "shortlink_zone_evictions_total",
        kind: "counter",
        help: "Entries evicted to make room for new ones.",
        value: |z| z.evictions,
    },
    Family {
        name: "shortlink_daemon_links_up",
        kind: "gauge",
        help: "Workers whose link to shortlinkd is up.",
        value: |z| z.links_up,
    },
    Family {
        name: "shortlink_daemon_links_down",
        kind: "gauge",
        help: "Workers whose link to shortlinkd is down.",
        value: |z| z.links_down,
    },
    Family {
        name: "shortlink_daemon_reconnects_total",
        kind: "counter",
        help: "Times a worker's link to shortlinkd came back after being down.",
        value: |z| z.reconnects,
    },
    Family {
        name: "shortlink_lookups_in_flight",
        kind: "gauge",
        help: "Lookups sent to shortlinkd and not answered yet.",
        value: |z| z.lookups_in_flight,
    },
    Family {
        name: "shortlink_requests_waiting",
        kind: "gauge",
        help: "Requests waiting for the answer of a lookup in flight.",
        value: |z| z.requests_waiting,
    },
    Family {
        name: "shortlink_clicks_pending",
        kind: "gauge",
        help: "Clicks counted and not yet stored by shortlinkd (as of each worker's last flush).",
        value: |z| z.clicks_pending,
    },
    Family {
        name: "shortlink_clicks_delivered_total",
        kind: "counter",
        help: "Clicks shortlinkd stored.",
        value: |z| z.clicks_delivered,
    },
    Family {
        name: "shortlink_clicks_spooled_total",
        kind: "counter",
        help: "Clicks written to spool files while shortlinkd could not take them.",
        value: |z| z.clicks_spooled,
    },
];

/// A zone name as a Prometheus label value.
fn label(name: &str) -> String {
    name.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The figures as Prometheus text exposition (`text/plain; version=0.0.4`).
pub fn prometheus(zones: &[ZoneFigures]) -> String {
    let mut out = String::new();
    out.push_str(
        "# HELP shortlink_requests_total Requests answered by the module, by cache status.\n\
         # TYPE shortlink_requests_total counter\n",
    );
    for z in zones {
        for (status, n) in CACHE_STATUSES.iter().zip(z.requests) {
            let _ = writeln!(
                out,
                "shortlink_requests_total{{zone=\"{}\",cache_status=\"{status}\"}} {n}",
                label(&z.name)
            );
        }
    }
    for f in &FAMILIES {
        let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
        let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind);
        for z in zones {
            let _ = writeln!(
                out,
                "{}{{zone=\"{}\"}} {}",
                f.name,
                label(&z.name),
                (f.value)(z)
            );
        }
    }
    out
}

/// The figures as JSON: `{"zones": [{"name": …, "requests": {"HIT": …}, …}]}`.
pub fn json(zones: &[ZoneFigures]) -> String {
    #[derive(Serialize)]
    struct Zone<'a> {
        #[serde(flatten)]
        figures: &'a ZoneFigures,
        requests: std::collections::BTreeMap<&'static str, u64>,
    }
    #[derive(Serialize)]
    struct Doc<'a> {
        zones: Vec<Zone<'a>>,
    }
    let doc = Doc {
        zones: zones
            .iter()
            .map(|z| Zone {
                figures: z,
                requests: CACHE_STATUSES.iter().copied().zip(z.requests).collect(),
            })
            .collect(),
    };
    serde_json::to_string(&doc).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone() -> ZoneFigures {
        ZoneFigures {
            name: "links".into(),
            requests: [10, 2, 3, 4, 5, 6],
            entries: 7,
            bytes_used: 4096,
            bytes_free: 8192,
            evictions: 1,
            links_up: 2,
            links_down: 0,
            reconnects: 3,
            lookups_in_flight: 1,
            requests_waiting: 12,
            clicks_pending: 9,
            clicks_delivered: 100,
            clicks_spooled: 11,
        }
    }

    #[test]
    fn prometheus_text_has_every_family_typed_once_with_its_samples() {
        let text = prometheus(&[zone()]);
        assert!(text.contains("shortlink_requests_total{zone=\"links\",cache_status=\"HIT\"} 10\n"));
        assert!(
            text.contains("shortlink_requests_total{zone=\"links\",cache_status=\"BYPASS\"} 6\n")
        );
        assert!(text.contains("shortlink_zone_bytes_free{zone=\"links\"} 8192\n"));
        assert!(text.contains("shortlink_clicks_spooled_total{zone=\"links\"} 11\n"));
        assert!(text.contains("shortlink_requests_waiting{zone=\"links\"} 12\n"));
        let types = text.lines().filter(|l| l.starts_with("# TYPE")).count();
        assert_eq!(types, FAMILIES.len() + 1);
        // Every sample line is `name{labels} value`, value an integer.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (series, value) = line.rsplit_once(' ').unwrap();
            assert!(series.contains("{zone=\"links\""), "{line}");
            value.parse::<u64>().unwrap();
        }
    }

    #[test]
    fn label_values_are_escaped() {
        let mut z = zone();
        z.name = "a\"b\\c".into();
        let text = prometheus(&[z]);
        assert!(text.contains("zone=\"a\\\"b\\\\c\""), "{text}");
    }

    #[test]
    fn json_names_the_cache_statuses() {
        let v: serde_json::Value = serde_json::from_str(&json(&[zone()])).unwrap();
        let z = &v["zones"][0];
        assert_eq!(z["name"], "links");
        assert_eq!(z["requests"]["MISS"], 2);
        assert_eq!(z["requests"]["EXPIRED"], 5);
        assert_eq!(z["links_up"], 2);
        assert_eq!(z["clicks_pending"], 9);
        assert_eq!(z["requests_waiting"], 12);
        assert_eq!(json(&[zone()]).matches("\"requests\"").count(), 1);
    }
}
