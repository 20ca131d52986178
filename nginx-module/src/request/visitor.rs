//! Who is asking: the device class and bot flag from `User-Agent` (through
//! a per-worker cache of classifications) and the `Referer`, read from the
//! request's headers once, when an answer first needs them; the country
//! from the `shortlink_country` variable.

use core::cell::RefCell;

use nginx_sys::ngx_str_t;
use ngx::http::Request;
use shortlink_core::country::{self, Country};
use shortlink_core::device::{classify, DeviceClass};

use super::RequestCtx;
use crate::conf::LocConf;

/// The visitor's country: the `shortlink_country` variable's value when it
/// is an assigned ISO 3166-1 alpha-2 code (any case), else unknown (also
/// when the location has no `shortlink_country`).
#[inline]
pub fn country_of(r: &Request, lcf: &LocConf) -> Country {
    let Some(index) = lcf.country_variable() else {
        return country::UNKNOWN;
    };
    let r: *const nginx_sys::ngx_http_request_t = r.as_ref();
    // SAFETY: a live request; the index was made by
    // ngx_http_get_variable_index for this configuration. nginx returns
    // null or a value owned by the request.
    let v = unsafe { nginx_sys::ngx_http_get_indexed_variable(r.cast_mut(), index).as_ref() };
    match v {
        Some(v) if v.not_found() == 0 && v.len() == 2 && !v.data.is_null() => {
            // SAFETY: a found value of len bytes at data.
            Country::from_edge(unsafe { core::slice::from_raw_parts(v.data, 2) })
        }
        _ => country::UNKNOWN,
    }
}

/// Who is asking, read from the request headers once per request.
#[derive(Clone, Copy)]
pub struct Visitor {
    /// Picks the device-specific target and labels the click.
    pub device: DeviceClass,
    /// Clicks by bots are counted apart.
    pub bot: bool,
    /// The `Referer` value (null data when absent), owned by the request.
    pub referer: ngx_str_t,
}

impl RequestCtx {
    /// The request's visitor, read from `r`'s headers on first use and kept
    /// in the ctx: only answers that need it (a found link, a counted
    /// click) pay for it.
    pub fn visitor(&mut self, r: &Request) -> Visitor {
        *self.visitor.get_or_insert_with(|| Visitor::of(r))
    }
}

impl Visitor {
    fn of(r: &Request) -> Self {
        let (device, bot) = r
            .user_agent()
            .map_or_else(|| classify(None), |ua| classify_cached(ua.as_bytes()));
        let h = r.as_ref().headers_in.referer;
        // SAFETY: headers_in.referer is null or a parsed header of this request.
        let referer = unsafe { h.as_ref() }.map_or_else(ngx_str_t::default, |h| h.value);
        Self {
            device,
            bot,
            referer,
        }
    }

    /// The `Referer` value, if the request has one.
    pub fn referer(&self) -> Option<&[u8]> {
        (self.referer.len > 0).then(|| self.referer.as_bytes())
    }
}

/// Slots of the per-worker `User-Agent` classification cache.
const UA_SLOTS: usize = 4096;

thread_local! {
    /// Direct-mapped: (hash of the whole value, class, bot). Traffic repeats a
    /// few thousand agents, so most requests skip the substring search. A
    /// hash collision can only mislabel a click's device class.
    static UA_CACHE: RefCell<Vec<(u64, DeviceClass, bool)>> =
        RefCell::new(vec![(0, DeviceClass::Other, false); UA_SLOTS]);
}

fn classify_cached(ua: &[u8]) -> (DeviceClass, bool) {
    let h = ua_hash(ua);
    UA_CACHE.with(|cache| {
        let Ok(mut cache) = cache.try_borrow_mut() else {
            return classify(Some(ua));
        };
        let slot = &mut cache[(h as usize) % UA_SLOTS];
        if slot.0 == h {
            return (slot.1, slot.2);
        }
        let (device, bot) = classify(Some(ua));
        *slot = (h, device, bot);
        (device, bot)
    })
}

/// A fast 64-bit hash of the value and its length (never 0, the empty slot).
fn ua_hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15 ^ bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        h = (h.rotate_left(5) ^ w).wrapping_mul(0x5175_2b52_2b77_9c6b);
    }
    for &b in chunks.remainder() {
        h = (h.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x5175_2b52_2b77_9c6b);
    }
    h | 1
}
