//! Blocklists of unsafe hosts, in the formats public phishing and malware
//! feeds are published in, read into one [`HostSet`] (a name also covers
//! its subdomains). One entry per line:
//!
//! * a host: `evil.example`, `*.evil.example`, `evil.example.`;
//! * a hosts-file line: `0.0.0.0 evil.example` or `127.0.0.1 a.example
//!   b.example` (the address is dropped, every name after it kept;
//!   `localhost` and the like are not entries); an address alone is an
//!   entry;
//! * an Adblock rule for a whole host: `||evil.example^` (options after
//!   `$` ignored);
//! * a URL: `http://evil.example/path` (its host).
//!
//! Blank lines and comments (`#` anywhere, `!` at the start, `[Adblock
//! …]` headers) are skipped. A line that is none of these is counted and
//! reported with its number, never silently taken.

use crate::target::{HostSet, NormalHost};

/// Names hosts files list that are never entries.
const NOT_ENTRIES: [&str; 6] = [
    "localhost",
    "localhost.localdomain",
    "local",
    "broadcasthost",
    "ip6-localhost",
    "ip6-loopback",
];

/// Bad lines kept for the report.
pub const REPORTED: usize = 5;

/// A parsed blocklist.
#[derive(Debug, Clone, Default)]
pub struct Blocklist {
    /// Every host listed.
    pub hosts: HostSet,
    /// Lines that were not entries, comments or blank.
    pub bad_lines: usize,
    /// The first [`REPORTED`] of them: line number (from 1) and why.
    pub first_bad: Vec<(usize, String)>,
}

/// The host entries of one line, or why it has none it should have.
fn entries(line: &str) -> Result<Vec<&str>, String> {
    let line = line.split('#').next().unwrap_or("").trim();
    if line.is_empty() || line.starts_with('!') || line.starts_with('[') {
        return Ok(Vec::new());
    }
    if let Some(rule) = line.strip_prefix("||") {
        let host = rule.split(['^', '$', '/']).next().unwrap_or("");
        return Ok(vec![host]);
    }
    if let Some((_, rest)) = line.split_once("://") {
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let host = authority.rsplit('@').next().unwrap_or("");
        return Ok(vec![host]);
    }
    let mut words = line.split_whitespace().peekable();
    let first = words.next().unwrap_or("");
    if first.parse::<std::net::IpAddr>().is_ok() && words.peek().is_some() {
        let names: Vec<&str> = words
            .filter(|w| !NOT_ENTRIES.contains(&w.to_ascii_lowercase().as_str()))
            .filter(|w| w.parse::<std::net::IpAddr>().is_err())
            .collect();
        return Ok(names);
    }
    if words.next().is_some() {
        return Err("one host per line (or an address then host names)".into());
    }
    Ok(vec![first])
}

/// Reads a blocklist; bad lines are counted and the first ones reported.
pub fn parse(text: &str) -> Blocklist {
    let mut list = Blocklist::default();
    for (i, line) in text.lines().enumerate() {
        let found = entries(line).and_then(|hosts| {
            hosts
                .into_iter()
                .map(|h| NormalHost::parse(h).map_err(|e| e.to_string()))
                .collect::<Result<Vec<_>, _>>()
        });
        match found {
            Ok(hosts) => hosts.into_iter().for_each(|h| list.hosts.insert(h)),
            Err(why) => {
                list.bad_lines += 1;
                if list.first_bad.len() < REPORTED {
                    list.first_bad.push((i + 1, why));
                }
            }
        }
    }
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(list: &Blocklist, url: &str) -> bool {
        list.hosts.matches_url(url)
    }

    #[test]
    fn every_feed_format_gives_its_hosts() {
        let list = parse(
            "# a hosts file\n\
             127.0.0.1 localhost\n\
             0.0.0.0 phish.example   # from feed A\n\
             0.0.0.0 a.example b.example\n\
             ::1 ip6-localhost\n\
             ! Adblock comment\n\
             [Adblock Plus 2.0]\n\
             ||ads.example^$third-party\n\
             https://user@malware.example:8443/payload.exe\n\
             *.Wild.EXAMPLE.\n\
             \n\
             plain.example\n\
             203.0.113.9\n",
        );
        assert_eq!(list.bad_lines, 0, "{:?}", list.first_bad);
        for url in [
            "https://phish.example/login",
            "https://x.phish.example/",
            "http://a.example/",
            "http://b.example/",
            "https://ads.example/",
            "https://malware.example/",
            "https://deep.wild.example/",
            "https://plain.example/",
            "http://203.0.113.9/",
        ] {
            assert!(listed(&list, url), "{url}");
        }
        for url in [
            "http://localhost/",
            "https://example.com/",
            "https://notphish.example/",
            "https://ip6-localhost/",
        ] {
            assert!(!listed(&list, url), "{url}");
        }
        assert_eq!(list.hosts.len(), 8);
    }

    #[test]
    fn bad_lines_are_counted_and_named_by_number() {
        let text = "good.example\nbad host here\nwith/slash\n0.0.0.0 fine.example\n";
        let list = parse(text);
        assert_eq!(list.bad_lines, 2);
        assert_eq!(list.first_bad[0].0, 2);
        assert!(
            list.first_bad[0].1.contains("one host per line"),
            "{:?}",
            list.first_bad
        );
        assert_eq!(list.first_bad[1].0, 3);
        assert!(
            list.first_bad[1].1.contains("with/slash"),
            "{:?}",
            list.first_bad
        );
        assert!(listed(&list, "https://fine.example/"));
        let many: String = (0..20).map(|i| format!("bad {i}\n")).collect();
        let list = parse(&many);
        assert_eq!((list.bad_lines, list.first_bad.len()), (20, REPORTED));
    }
}
