//! A person's redirect of a limited link: one visit of those the daemon
//! leased to this node is spent from the zone (`cache::spend_visit`), or
//! the request waits while the worker leases more (`net/visits.rs`), and
//! is answered again once one is spent for it, or 410 (or the fallback)
//! when the link has none left.

use ngx::http::{HttpModuleMainConf, Request};

use super::Step;
use crate::net::{with_link, Started};
use crate::request::RequestCtx;
use crate::Module;

/// Spends one visit this node holds for `link` (leased under `limit`):
/// false when none is left. Visits the zone gave up go back to the daemon.
pub(super) fn spend(r: &Request, link: u64, limit: u64) -> bool {
    let Some(cache) = Module::main_conf(r).and_then(|m| m.cache()) else {
        return false;
    };
    let (spent, returned) = cache.spend_visit(link, limit);
    if let Some(returned) = returned {
        with_link(|l| l.return_visits(returned));
    }
    spent
}

/// No visit of `link` left on this node: the request waits for a lease
/// (`Some(Step::Suspended)`), or `None` when the daemon is down (the
/// caller answers a fast 503, or the fallback).
pub(super) fn wait(r: &mut Request, ctx: &mut RequestCtx, link: u64, limit: u64) -> Option<Step> {
    ctx.note_id(link);
    let raw = r.as_mut() as *mut _;
    match with_link(|l| l.lease_visits(link, limit, raw)) {
        Some(Started::Waiting) => {
            ctx.awaiting_visit = true;
            // Notice a client that gives up while we wait.
            let raw = r.as_mut();
            raw.read_event_handler = Some(nginx_sys::ngx_http_test_reading);
            raw.write_event_handler = Some(nginx_sys::ngx_http_request_empty_handler);
            Some(Step::Suspended)
        }
        Some(Started::Unavailable) | None => None,
    }
}
