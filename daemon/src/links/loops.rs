//! A link may not point at a short URL of its own deployment: the visitor
//! would go round in a loop, or through a second redirect counted twice.
//!
//! [`ServedBases`] knows the bases the daemon serves short URLs under: the
//! configured `base_url` and every base nginx has passed in
//! `X-Shortlink-Base`. A target on one of them whose path (after the base's
//! own path) is one segment that decodes as a generated code is refused at
//! once; one shaped like an alias is refused by the write when that alias
//! exists (or is the link's own), since only the store knows.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

use shortlink_core::{CheckedTarget, Codec, NormalHost};

use crate::codes;
use crate::store::links::invalid;
use crate::store::{CodeRef, LinkError};

/// Most `X-Shortlink-Base` values remembered (nginx sets it, so a handful
/// is usual; the bound keeps a misbehaving proxy from growing the set).
pub const MAX_LEARNED_BASES: usize = 256;

/// The bases short URLs are served under.
#[derive(Debug, Clone, Default)]
pub struct ServedBases {
    inner: Arc<RwLock<Bases>>,
}

#[derive(Debug, Default)]
struct Bases {
    /// By server (host in normal form and port): each one's path prefixes
    /// (`""` for a base at the root).
    by_host: HashMap<Server, Vec<String>>,
    /// Header values already looked at, so a request with a known base
    /// costs one hash probe, not a URL parse.
    seen: HashSet<String>,
    /// The bound was reached (said once in the log).
    full: bool,
}

impl Bases {
    #[cfg(test)]
    fn count(&self) -> usize {
        self.by_host.values().map(Vec::len).sum()
    }
}

impl ServedBases {
    /// The configured base (already checked by the configuration).
    pub fn new(configured: &str) -> Self {
        let served = Self::default();
        if let Some((server, prefix)) = split_base(configured) {
            served.write().by_host.insert(server, vec![prefix]);
        }
        served
    }

    /// Remembers a base nginx passed; an invalid one is ignored (the reply
    /// falls back to the configured base for it too).
    pub fn remember(&self, base: &str) {
        if self.read().seen.contains(base) {
            return;
        }
        let parsed = split_base(base);
        let mut bases = self.write();
        // Every learned base came in one header value: bounding those
        // bounds both sets.
        if bases.seen.len() >= MAX_LEARNED_BASES {
            if !bases.full {
                bases.full = true;
                tracing::warn!(
                    base,
                    "not remembering more short-URL bases: {MAX_LEARNED_BASES} are known already"
                );
            }
            return;
        }
        bases.seen.insert(base.to_string());
        let Some((server, prefix)) = parsed else {
            return;
        };
        let prefixes = bases.by_host.entry(server).or_default();
        if !prefixes.contains(&prefix) {
            tracing::info!(base, "serving short URLs under a new base");
            prefixes.push(prefix);
        }
    }

    /// The code or alias a target leads to when it is a short URL of a
    /// served base (its host, and its port, see [`Server`]): the one path
    /// segment after the base's path, percent-decoded (nginx decodes the
    /// URI before taking the code).
    pub fn code_of(&self, target: &str) -> Option<String> {
        let url = url::Url::parse(target).ok()?;
        let host = NormalHost::of_url(&url)?;
        self.code_at(&url, &host)
    }

    /// [`ServedBases::code_of`] for a URL already parsed, `host` its host
    /// in normal form.
    fn code_at(&self, url: &url::Url, host: &NormalHost) -> Option<String> {
        let bases = self.read();
        let prefixes = bases.by_host.get(&Server::of(url, host))?;
        let path = url.path();
        prefixes.iter().find_map(|prefix| {
            let rest = path.strip_prefix(prefix.as_str())?.strip_prefix('/')?;
            // nginx merges repeated slashes.
            let rest = rest.trim_start_matches('/');
            if rest.is_empty() || rest.contains('/') {
                return None;
            }
            percent_decode(rest)
        })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Bases> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Bases> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }
}

/// Where a short URL is served: a host in normal form (an IPv4-mapped
/// address is its IPv4 one) and a port. The web's two default ports are
/// one: a site answers on both and sends one to the other, so
/// `http://s.example/c` leads to `https://s.example/c`. Any other port is
/// another server (`127.0.0.1:9000` is not the short links on `:8080`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Server {
    host: String,
    /// `None` for 80 and 443.
    port: Option<u16>,
}

impl Server {
    fn of(url: &url::Url, host: &NormalHost) -> Self {
        let port = url
            .port_or_known_default()
            .filter(|p| ![80, 443].contains(p));
        Self {
            host: host.name.clone(),
            port,
        }
    }
}

/// A base as its server and path prefix without a trailing slash.
fn split_base(base: &str) -> Option<(Server, String)> {
    let base = crate::base_url::parse_base(base).ok()?;
    let url = url::Url::parse(&base).ok()?;
    let host = NormalHost::of_url(&url)?;
    Some((
        Server::of(&url, &host),
        url.path().trim_end_matches('/').to_string(),
    ))
}

/// `%XX` escapes decoded; `None` when the result is not UTF-8 or an escape
/// is broken (neither can be a code or an alias).
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A target on a served base whose path is shaped like an alias: refused
/// by the write if that alias exists or is the link's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AliasTarget {
    /// The field the target came in (`url`, `targets.ios`).
    pub field: &'static str,
    /// The target, normalised.
    pub url: String,
    /// The alias its path names.
    pub alias: String,
}

impl ServedBases {
    /// Refuses a target that is the short URL of a generated code of this
    /// deployment (codes of `codec`); one naming an alias is added to
    /// `aliases`, for the write to look up.
    pub(crate) fn check_not_short(
        &self,
        codec: &Codec,
        field: &'static str,
        target: &CheckedTarget,
        aliases: &mut Vec<AliasTarget>,
    ) -> Result<(), LinkError> {
        let Some(code) = self.code_at(&target.url, &target.host) else {
            return Ok(());
        };
        let url = target.url.as_str();
        match codes::resolve(codec, &code) {
            CodeRef::Id(_) => Err(short_link(field, url, &code)),
            CodeRef::Alias(alias) => {
                aliases.push(AliasTarget {
                    field,
                    url: url.to_string(),
                    alias,
                });
                Ok(())
            }
            CodeRef::Invalid => Ok(()),
        }
    }
}

/// The refusal of a target that leads to an existing alias, or to the
/// link's own (the store finds which, in the write's transaction).
pub(crate) fn alias_target_error(t: &AliasTarget) -> LinkError {
    short_link(t.field, &t.url, &t.alias)
}

/// A link whose new alias is the code one of its own targets leads to.
pub(crate) fn refuse_own_alias(
    served: &ServedBases,
    link: &crate::store::Link,
) -> Option<LinkError> {
    let alias = link.alias.as_deref()?;
    let t = &link.targets;
    [
        ("url", Some(&link.url)),
        ("targets.desktop", t.desktop.as_ref()),
        ("targets.mobile", t.mobile.as_ref()),
        ("targets.ios", t.ios.as_ref()),
        ("targets.android", t.android.as_ref()),
    ]
    .into_iter()
    .find_map(|(field, url)| {
        let url = url?;
        (served.code_of(url).as_deref() == Some(alias)).then(|| short_link(field, url, alias))
    })
}

fn short_link(field: &'static str, url: &str, code: &str) -> LinkError {
    invalid(
        field,
        "target_is_short_link",
        format!(
            "{field}: {url} is a short link of this deployment (it leads to \"{code}\"); \
             point the link at the final target instead"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_of_served_bases() {
        let served = ServedBases::new("https://S.example/");
        served.remember("https://go.example.net/to");
        served.remember("javascript:alert(1)");
        served.remember("https://go.example.net/to/");
        let code = |u: &str| served.code_of(u);
        assert_eq!(code("https://s.example/aZ3k"), Some("aZ3k".into()));
        assert_eq!(code("http://S.EXAMPLE.//aZ3k?x=1#f"), Some("aZ3k".into()));
        assert_eq!(code("http://s.example:443/aZ3k"), Some("aZ3k".into()));
        assert_eq!(code("https://s.example:8443/aZ3k"), None, "another server");
        assert_eq!(code("https://s.example/%61Z3k"), Some("aZ3k".into()));
        assert_eq!(
            code("https://go.example.net/to/my-alias"),
            Some("my-alias".into())
        );
        assert_eq!(code("https://go.example.net/my-alias"), None);
        assert_eq!(code("https://s.example/"), None);
        assert_eq!(code("https://s.example/a/b"), None);
        assert_eq!(code("https://www.s.example/aZ3k"), None);
        assert_eq!(code("https://s.example/%ff"), None);
        assert_eq!(code("https://s.example/%6"), None);
    }

    /// A base on a port of its own is matched on that port only, and in
    /// every form of its address.
    #[test]
    fn ports_and_address_forms_of_a_base() {
        let served = ServedBases::new("http://127.0.0.1:8080/");
        served.remember("http://[::1]:8081");
        let code = |u: &str| served.code_of(u);
        assert_eq!(code("http://127.0.0.1:8080/aZ3k"), Some("aZ3k".into()));
        assert_eq!(
            code("http://[::ffff:127.0.0.1]:8080/aZ3k"),
            Some("aZ3k".into())
        );
        assert_eq!(
            code("https://[::ffff:7f00:1]:8080/aZ3k"),
            Some("aZ3k".into())
        );
        assert_eq!(code("http://127.0.0.1:9000/aZ3k"), None);
        assert_eq!(code("http://127.0.0.1/aZ3k"), None);
        assert_eq!(code("http://[0::1]:8081/aZ3k"), Some("aZ3k".into()));
        assert_eq!(code("http://[::1]:8080/aZ3k"), None);
    }

    #[test]
    fn learned_bases_are_bounded() {
        let served = ServedBases::new("https://s.example");
        for i in 0..MAX_LEARNED_BASES + 10 {
            served.remember(&format!("https://h{i}.example"));
            served.remember("not a base");
        }
        // The configured base, and 255 learned beside the invalid value.
        assert_eq!(served.read().seen.len(), MAX_LEARNED_BASES);
        assert_eq!(served.read().count(), MAX_LEARNED_BASES);
        assert!(served.read().full);
        assert_eq!(
            served.code_of("https://h1.example/aZ3k"),
            Some("aZ3k".into())
        );
        assert_eq!(served.code_of("https://h300.example/aZ3k"), None);
    }
}
