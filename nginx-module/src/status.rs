//! `shortlink_status`: a location that answers the edge's figures, the way
//! `stub_status` does: requests by cache status, the zone's entries, bytes
//! and evictions, the daemon links, lookups in flight and clicks pending,
//! delivered and spooled, for every worker at once (`cache/figures.rs`
//! keeps them in the shared zone). Prometheus text by default, JSON with
//! `?format=json`; the formats are core's `edge_status`.

use nginx_sys::{ngx_int_t, NGX_HTTP_GET, NGX_HTTP_HEAD, NGX_HTTP_NOT_ALLOWED};
use ngx::http::Request;
use shortlink_core::edge_status::{self, ZoneFigures};

use crate::conf::MainConf;
use crate::page::send_page;

const PROMETHEUS: &str = "text/plain; version=0.0.4; charset=utf-8";
const JSON: &str = "application/json";

/// Answers the figures (the location has `shortlink_status`; called from
/// the phase handler, after the access checks).
pub fn answer(r: &mut Request, main: &MainConf) -> ngx_int_t {
    let method = r.as_ref().method as u32;
    if method != NGX_HTTP_GET && method != NGX_HTTP_HEAD {
        return NGX_HTTP_NOT_ALLOWED as ngx_int_t;
    }
    let zones: Vec<ZoneFigures> = figures(main).into_iter().collect();
    let (body, content_type) = if wants_json(r.as_ref().args.as_bytes()) {
        (edge_status::json(&zones), JSON)
    } else {
        (edge_status::prometheus(&zones), PROMETHEUS)
    };
    send_page(
        r,
        content_type,
        &[("Cache-Control", "no-store")],
        body.as_bytes(),
    )
}

/// True when the query string has `format=json`.
fn wants_json(args: &[u8]) -> bool {
    args.split(|&b| b == b'&').any(|p| p == b"format=json")
}

/// The zone's figures, if the configuration has one.
fn figures(main: &MainConf) -> Option<ZoneFigures> {
    let zone = main.zone()?;
    let cache = main.cache()?;
    // SAFETY: the shm zone lives as long as the cycle; its name is set.
    let name = unsafe { (*zone.zone).shm.name.to_string() };
    let mut f = ZoneFigures {
        name,
        ..ZoneFigures::default()
    };
    cache.status_rows().sum(&mut f);
    let (entries, used, free) = cache.usage();
    f.entries = entries as u64;
    f.bytes_used = used as u64;
    f.bytes_free = free as u64;
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::wants_json;

    #[test]
    fn format_json_is_one_parameter_among_others() {
        assert!(wants_json(b"format=json"));
        assert!(wants_json(b"a=1&format=json"));
        assert!(!wants_json(b"format=jsonx"));
        assert!(!wants_json(b""));
    }
}
