//! The text of a `database` URL before it is parsed: libpq's host lists
//! (`postgres://u@h1:5432,h2:5432/db`, which the `url` crate refuses) and
//! the password hidden wherever the text is shown, even in a URL too
//! broken to parse or quoted inside another error (a TOML parse error
//! repeats the line).

/// Where the authority (`user:password@hosts`) lies in `text`, if it has
/// a scheme.
fn authority(text: &str) -> Option<std::ops::Range<usize>> {
    let start = text.find("://")? + 3;
    let end = text[start..]
        .find(['/', '?', '#'])
        .map_or(text.len(), |i| start + i);
    Some(start..end)
}

/// `text` with its host list cut to the first host, and every host of
/// the list (`host:port` each, as written); `None` when there is no list.
pub fn split_hosts(text: &str) -> Option<(String, Vec<String>)> {
    let auth = authority(text)?;
    let hosts_at = text[auth.clone()]
        .rfind('@')
        .map_or(auth.start, |i| auth.start + i + 1);
    let hosts = &text[hosts_at..auth.end];
    if !hosts.contains(',') {
        return None;
    }
    let list: Vec<String> = hosts.split(',').map(str::to_string).collect();
    let first = format!("{}{}{}", &text[..hosts_at], list[0], &text[auth.end..]);
    Some((first, list))
}

/// `url` (one URL, no surrounding text) with its password, in the user
/// part or as a `password=` parameter, replaced by `***`.
pub fn redact(url: &str) -> String {
    let mut out = url.to_string();
    if let Some(auth) = authority(url) {
        if let Some(at) = url[auth.clone()].rfind('@') {
            let user = &url[auth.start..auth.start + at];
            if let Some(colon) = user.find(':') {
                let from = auth.start + colon + 1;
                out = format!("{}***{}", &url[..from], &url[auth.start + at..]);
            }
        }
    }
    redact_password_param(&out)
}

/// `text` with the value of every `password=` query parameter hidden.
fn redact_password_param(text: &str) -> String {
    let Some(query) = text.find('?') else {
        return text.to_string();
    };
    let mut out = text[..=query].to_string();
    let pairs: Vec<String> = text[query + 1..]
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if key == "password" => format!("{key}=***"),
            _ => pair.to_string(),
        })
        .collect();
    out.push_str(&pairs.join("&"));
    out
}

/// `text` (an error message, a config line) with every URL in it
/// (`scheme://…`, any scheme: a `mysql://` URL given by mistake holds a
/// password too) redacted; a URL is bounded by white space or quotes.
pub fn redact_urls_in(text: &str) -> String {
    let bound = |c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let start = rest[..at].rfind(bound).map_or(0, |i| i + 1);
        let end = rest[at..].find(bound).map_or(rest.len(), |i| at + i);
        out.push_str(&rest[..start]);
        out.push_str(&redact(&rest[start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_list_is_split_and_the_first_host_kept() {
        let (first, hosts) =
            split_hosts("postgres://sl:pw@h1:5433,h2:5434/db?target_session_attrs=read-write")
                .unwrap();
        assert_eq!(
            first,
            "postgres://sl:pw@h1:5433/db?target_session_attrs=read-write"
        );
        assert_eq!(hosts, ["h1:5433", "h2:5434"]);
        assert_eq!(split_hosts("postgres://sl@h1:5433/db"), None);
        assert_eq!(split_hosts("no scheme, here"), None);
    }

    #[test]
    fn passwords_are_hidden_in_the_user_part_and_the_query() {
        for (url, shown) in [
            ("postgres://sl:s3cret@h/d", "postgres://sl:***@h/d"),
            (
                "postgres://sl:s3:cr@et@h:port/d",
                "postgres://sl:***@h:port/d",
            ),
            (
                "postgres://sl@h1,h2/d?password=s3cret&sslmode=disable",
                "postgres://sl@h1,h2/d?password=***&sslmode=disable",
            ),
            ("postgres://sl@h/d", "postgres://sl@h/d"),
        ] {
            assert_eq!(redact(url), shown);
        }
    }

    #[test]
    fn urls_inside_other_text_are_hidden() {
        let toml_error = "TOML parse error at line 1, column 12\n  |\n1 | database = \
                          \"postgres://sl:s3cret@h/d?x=1\"\n  |            ^^^^\n\
                          \"postgresql://a:b3@h/d\": unknown parameter `x`; mysql://u:m4@h/d \
                          postgres is fine";
        let shown = redact_urls_in(toml_error);
        for secret in ["s3cret", "b3@", "m4@"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(shown.contains("postgres://sl:***@h/d?x=1"), "{shown}");
        assert!(shown.ends_with("postgres is fine"), "{shown}");
    }
}
