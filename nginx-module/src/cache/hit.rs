//! `Hit`: a found link as the request path answers with it, made by one
//! function ([`Hit::of`]) whether the link came from the zone, a front-cache
//! slot or straight from the daemon, so core's rule of which target a
//! visitor gets (`shortlink_core::choice`: country, then device, then the
//! main target) is applied in one place.

use nginx_sys::ngx_str_t;
use shortlink_core::choice::{choose, Choice, Variants};
use shortlink_core::country::Country;
use shortlink_core::device::DeviceClass;
use shortlink_core::ipc::EdgeLink;
use shortlink_core::preview::day_of;
use shortlink_core::variants::{kept_by, tag};
use shortlink_core::RedirectStatus;

/// A found link, with the target for the visitor copied out (into the
/// request's pool).
pub struct Hit {
    pub id: u64,
    /// The link's own status; `None` uses `shortlink_redirect`.
    pub status: Option<RedirectStatus>,
    /// Unix seconds after which the link is gone.
    pub expires_at: Option<i64>,
    pub disabled: bool,
    pub target: ngx_str_t,
    /// The link has device-specific targets: the answer depends on the
    /// `User-Agent` (`Vary: User-Agent`).
    pub by_device: bool,
    /// The link has country targets or variants: the answer depends on
    /// the visitor's address or the visit (`Cache-Control: private`).
    pub private: bool,
    /// The A/B variant served, if one was.
    pub variant: Option<u8>,
    /// That variant is the one the visitor's cookie keeps (no new cookie).
    pub kept: bool,
    /// The link's own `forward_query`; `None`: the location decides.
    pub forward_query: Option<bool>,
    /// Days since 1970-01-01 when the link was made (for its preview).
    pub created_day: u16,
    /// Set when visitors must give the password first (or hold the link's
    /// cookie): the tag of the password, which the cookie must carry.
    pub password_tag: Option<u32>,
    /// The link's visit limit: a person's redirect spends a leased visit.
    pub max_visits: Option<u64>,
}

extern "C" {
    /// The C library's `random()`: nginx's `ngx_random`, seeded per worker
    /// (pid and time) when the worker starts.
    fn random() -> core::ffi::c_long;
}

/// A random number for the A/B pick (asked for only when one is made).
fn ngx_random() -> u64 {
    // SAFETY: random() takes nothing and only updates libc's own state; a
    // worker runs requests on one thread.
    unsafe { random() as u64 }
}

/// Read access to a link wherever it is held.
pub trait LinkView {
    fn id(&self) -> u64;
    fn status(&self) -> Option<RedirectStatus>;
    fn expires_at(&self) -> Option<i64>;
    fn disabled(&self) -> bool;
    fn forward_query(&self) -> Option<bool>;
    /// Set when visitors must give a password first: its tag.
    fn password_tag(&self) -> Option<u32>;
    /// The link's visit limit.
    fn max_visits(&self) -> Option<u64>;
    /// Days since 1970-01-01 when the link was made.
    fn created_day(&self) -> u16;
    /// The target kept for exactly `class` (`Other`: the main target);
    /// empty when unset.
    fn target(&self, class: DeviceClass) -> &[u8];

    /// True when [`LinkView::target`] is not empty (cheaper for some holders).
    fn has_target(&self, class: DeviceClass) -> bool {
        !self.target(class).is_empty()
    }

    /// True when some device class has a target of its own.
    fn has_device_targets(&self) -> bool {
        DEVICE_CLASSES.iter().any(|&c| self.has_target(c))
    }

    /// How many country targets the link has.
    fn country_count(&self) -> usize {
        0
    }

    /// The country of country target `i` (< `country_count`).
    fn country(&self, _i: usize) -> Country {
        shortlink_core::country::UNKNOWN
    }

    /// The URL of country target `i` (< `country_count`).
    fn country_target(&self, _i: usize) -> &[u8] {
        &[]
    }

    /// How many A/B variants the link has.
    fn variant_count(&self) -> usize {
        0
    }

    /// The weight of variant `i` (< `variant_count`).
    fn weight(&self, _i: usize) -> u32 {
        0
    }

    /// The URL of variant `i` (< `variant_count`).
    fn variant_target(&self, _i: usize) -> &[u8] {
        &[]
    }
}

/// The classes a link may have a target of its own for.
const DEVICE_CLASSES: [DeviceClass; 4] = [
    DeviceClass::Desktop,
    DeviceClass::Mobile,
    DeviceClass::Ios,
    DeviceClass::Android,
];

impl Hit {
    /// The answer for a visitor of `device` class from `country` (read
    /// only when the link has country targets) whose variant cookie holds
    /// `kept` (read only when a variant is picked; the variant it names
    /// counts only while its URL is unchanged): the link's facts and the
    /// target core's rule picks, handed to `copy`. `None` when `copy`
    /// fails.
    #[inline]
    pub fn of<'k>(
        link: &impl LinkView,
        device: DeviceClass,
        country: impl FnOnce() -> Country,
        kept: impl FnOnce() -> Option<&'k str>,
        copy: impl FnOnce(&[u8]) -> Option<ngx_str_t>,
    ) -> Option<Hit> {
        let countries = link.country_count();
        let codes = (0..countries).map(|i| link.country(i));
        let has = |c| link.has_target(c);
        let count = link.variant_count();
        let variants = Variants {
            weights: (0..count).map(|i| link.weight(i)),
            random: ngx_random,
            kept: || kept_by(kept()?, count, |i| tag(link.variant_target(i))),
        };
        let mut variant = None;
        let mut kept = false;
        let target = match choose(codes, country, device, has, variants) {
            Choice::Country(i) => link.country_target(i),
            Choice::Device(class) => link.target(class),
            Choice::Variant(i) => {
                variant = Some(i as u8);
                link.variant_target(i)
            }
            Choice::Kept(i) => {
                variant = Some(i as u8);
                kept = true;
                link.variant_target(i)
            }
        };
        Some(Hit {
            id: link.id(),
            status: link.status(),
            expires_at: link.expires_at(),
            disabled: link.disabled(),
            target: copy(target)?,
            by_device: link.has_device_targets(),
            private: countries > 0 || link.variant_count() > 0,
            variant,
            kept,
            forward_query: link.forward_query(),
            created_day: link.created_day(),
            password_tag: link.password_tag(),
            max_visits: link.max_visits(),
        })
    }
}

impl LinkView for EdgeLink {
    fn id(&self) -> u64 {
        self.id
    }

    fn status(&self) -> Option<RedirectStatus> {
        self.status
    }

    fn expires_at(&self) -> Option<i64> {
        self.expires_at
    }

    fn disabled(&self) -> bool {
        self.disabled
    }

    fn forward_query(&self) -> Option<bool> {
        self.forward_query
    }

    fn password_tag(&self) -> Option<u32> {
        self.password_tag
    }

    fn max_visits(&self) -> Option<u64> {
        self.max_visits
    }

    fn created_day(&self) -> u16 {
        day_of(self.created_at)
    }

    fn target(&self, class: DeviceClass) -> &[u8] {
        match class {
            DeviceClass::Other => self.target.as_bytes(),
            _ => self.targets.get(class).unwrap_or("").as_bytes(),
        }
    }

    fn country_count(&self) -> usize {
        self.country_targets.len()
    }

    fn country(&self, i: usize) -> Country {
        self.country_targets[i].0
    }

    fn country_target(&self, i: usize) -> &[u8] {
        self.country_targets[i].1.as_bytes()
    }

    fn variant_count(&self) -> usize {
        self.variants.len()
    }

    fn weight(&self, i: usize) -> u32 {
        self.variants[i].weight
    }

    fn variant_target(&self, i: usize) -> &[u8] {
        self.variants[i].url.as_bytes()
    }
}
