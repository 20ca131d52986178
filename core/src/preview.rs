//! Link previews (`shortlink_preview_suffix`): `/<code>+` answers a small
//! HTML page saying where the link goes, when it was made, and a link to
//! follow it, instead of the redirect. Everything the module needs to build
//! it without I/O lives here: the suffix rule, HTML escaping, the creation
//! day as the zone keeps it, and the page.
//!
//! The suffix rule: 1 to [`MAX_SUFFIX_LEN`] visible ASCII characters, none of
//! them `/ ? # % \` or a quote, and at least one that no code or alias can
//! hold (anything but `0-9A-Za-z-_`). So no code or alias ever ends in the
//! suffix, and `/<code><suffix>` never names another link.

/// Longest preview suffix.
pub const MAX_SUFFIX_LEN: usize = 8;

/// The page's `Content-Security-Policy`: nothing is loaded, nothing runs,
/// only the page's own inline style applies.
pub const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The page's `Content-Type`.
pub const CONTENT_TYPE: &str = "text/html; charset=utf-8";

/// Why a preview suffix was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SuffixError {
    #[error("preview suffix is empty")]
    Empty,
    #[error("preview suffix is {len} bytes, longer than the maximum of {MAX_SUFFIX_LEN}")]
    TooLong { len: usize },
    #[error(
        "preview suffix may hold only visible ASCII other than / ? # % \\ \" and '; found {found:?}"
    )]
    BadChar { found: char },
    #[error(
        "preview suffix \"{0}\" is made of code and alias characters (0-9, A-Z, a-z, '-', '_'), so a code or alias could end in it; use a character such as '+', '~' or '!'"
    )]
    CodeCharacters(String),
}

/// Checks a `shortlink_preview_suffix` value against the rule above.
pub fn parse_suffix(suffix: &str) -> Result<&str, SuffixError> {
    if suffix.is_empty() {
        return Err(SuffixError::Empty);
    }
    if let Some(found) = suffix
        .chars()
        .find(|&c| !c.is_ascii_graphic() || matches!(c, '/' | '?' | '#' | '%' | '\\' | '"' | '\''))
    {
        return Err(SuffixError::BadChar { found });
    }
    if suffix.len() > MAX_SUFFIX_LEN {
        return Err(SuffixError::TooLong { len: suffix.len() });
    }
    if suffix.bytes().all(is_code_byte) {
        return Err(SuffixError::CodeCharacters(suffix.to_string()));
    }
    Ok(suffix)
}

/// A byte a code or an alias may hold.
fn is_code_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// The code a preview path asks about: `path` without `suffix`, when it ends
/// in it and something is left.
pub fn strip_suffix<'a>(path: &'a [u8], suffix: &[u8]) -> Option<&'a [u8]> {
    if suffix.is_empty() {
        return None;
    }
    path.strip_suffix(suffix).filter(|code| !code.is_empty())
}

/// Appends `text` to `out` with `& < > " '` written as character
/// references, so it is safe in element content and in quoted attributes.
pub fn escape_into(text: &[u8], out: &mut Vec<u8>) {
    for &b in text {
        match b {
            b'&' => out.extend_from_slice(b"&amp;"),
            b'<' => out.extend_from_slice(b"&lt;"),
            b'>' => out.extend_from_slice(b"&gt;"),
            b'"' => out.extend_from_slice(b"&quot;"),
            b'\'' => out.extend_from_slice(b"&#39;"),
            _ => out.push(b),
        }
    }
}

/// Days since 1970-01-01 of the Unix time `secs`, as the zone keeps a link's
/// creation (two bytes: up to the year 2149); clamped to that range.
pub fn day_of(secs: i64) -> u16 {
    secs.div_euclid(86_400).clamp(0, i64::from(u16::MAX)) as u16
}

/// `YYYY-MM-DD` of a day since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
pub fn date_of(day: u16) -> [u8; 10] {
    let z = i64::from(day) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let mut out = *b"0000-00-00";
    for (i, v) in [
        (0, y / 1000),
        (1, y / 100 % 10),
        (2, y / 10 % 10),
        (3, y % 10),
    ] {
        out[i] = b'0' + v as u8;
    }
    out[5] = b'0' + (m / 10) as u8;
    out[6] = b'0' + (m % 10) as u8;
    out[8] = b'0' + (d / 10) as u8;
    out[9] = b'0' + (d % 10) as u8;
    out
}

/// True when a browser may follow `target` from the page (`http:` or
/// `https:`); a target of another scheme the operator allowed is shown, not
/// linked.
fn followable(target: &[u8]) -> bool {
    let lower = |n: usize| target.get(..n).map(|p| p.to_ascii_lowercase());
    lower(7).as_deref() == Some(b"http://") || lower(8).as_deref() == Some(b"https://")
}

const HEAD: &str = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<meta name=\"referrer\" content=\"no-referrer\"><meta name=\"robots\" content=\"noindex\">\
<title>Link preview</title><style>\
body{font:16px/1.5 system-ui,sans-serif;margin:0;padding:2rem 1rem;color:#222;background:#fafafa}\
main{max-width:40rem;margin:auto;background:#fff;border:1px solid #ddd;border-radius:8px;padding:1.5rem}\
h1{font-size:1.2rem;margin:0 0 1rem}.url{word-break:break-all;font-family:monospace;background:#f3f3f3;padding:.5rem;border-radius:4px}\
a.go{display:inline-block;margin-top:.5rem;padding:.5rem 1rem;background:#1a5fb4;color:#fff;border-radius:4px;text-decoration:none}\
</style></head><body><main><h1>This short link leads to</h1><p class=\"url\">";

/// The preview page of a link to `target` created on `day` (see
/// [`day_of`]).
pub fn render(target: &[u8], day: u16) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEAD.len() + 400 + 2 * target.len());
    out.extend_from_slice(HEAD.as_bytes());
    escape_into(target, &mut out);
    let date = date_of(day);
    out.extend_from_slice(b"</p><p>Created on <time datetime=\"");
    out.extend_from_slice(&date);
    out.extend_from_slice(b"\">");
    out.extend_from_slice(&date);
    out.extend_from_slice(b"</time>.</p>");
    if followable(target) {
        out.extend_from_slice(b"<p><a class=\"go\" rel=\"noopener noreferrer nofollow\" href=\"");
        escape_into(target, &mut out);
        out.extend_from_slice(b"\">Follow the link</a></p>");
    } else {
        out.extend_from_slice(b"<p>This address cannot be opened from here.</p>");
    }
    out.extend_from_slice(b"</main></body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn escaped(text: &str) -> String {
        let mut out = Vec::new();
        escape_into(text.as_bytes(), &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escaping_writes_references_for_the_five_characters() {
        assert_eq!(
            escaped(r#"a<b>"c"&'d'"#),
            "a&lt;b&gt;&quot;c&quot;&amp;&#39;d&#39;"
        );
        assert_eq!(escaped("https://e.com/é?x=1"), "https://e.com/é?x=1");
    }

    #[test]
    fn suffixes_of_code_characters_or_unsafe_ones_are_refused() {
        for ok in ["+", "~", "!", "-+", "+info", "_.", "$"] {
            assert_eq!(parse_suffix(ok), Ok(ok), "{ok}");
        }
        assert_eq!(parse_suffix(""), Err(SuffixError::Empty));
        for code_like in ["p", "-", "_", "x-y", "PREVIEW"] {
            let err = parse_suffix(code_like).unwrap_err();
            assert_eq!(err, SuffixError::CodeCharacters(code_like.into()));
            assert!(err.to_string().contains("code and alias characters"));
        }
        for (bad, found) in [
            ("/", '/'),
            ("+?", '?'),
            ("#", '#'),
            ("%2B", '%'),
            ("+ ", ' '),
            ("é", 'é'),
            ("\"", '"'),
        ] {
            assert_eq!(parse_suffix(bad), Err(SuffixError::BadChar { found }));
        }
        assert_eq!(
            parse_suffix("+++++++++"),
            Err(SuffixError::TooLong { len: 9 })
        );
    }

    #[test]
    fn the_suffix_is_stripped_only_when_a_code_is_left() {
        assert_eq!(strip_suffix(b"aZ3kQ9x+", b"+"), Some(&b"aZ3kQ9x"[..]));
        assert_eq!(strip_suffix(b"my-alias~~", b"~~"), Some(&b"my-alias"[..]));
        assert_eq!(strip_suffix(b"aZ3kQ9x", b"+"), None);
        assert_eq!(strip_suffix(b"+", b"+"), None);
        assert_eq!(strip_suffix(b"aZ3kQ9x+", b""), None);
    }

    #[test]
    fn days_and_dates() {
        assert_eq!(&date_of(0), b"1970-01-01");
        assert_eq!(day_of(1_700_000_000), 19_675);
        assert_eq!(&date_of(19_675), b"2023-11-14");
        assert_eq!(&date_of(day_of(951_782_400)), b"2000-02-29");
        assert_eq!(&date_of(day_of(1_709_251_199)), b"2024-02-29");
        assert_eq!(day_of(-5), 0);
        assert_eq!(day_of(i64::MAX), u16::MAX);
        assert_eq!(&date_of(u16::MAX), b"2149-06-06");
    }

    #[test]
    fn the_page_shows_the_escaped_target_the_date_and_a_link() {
        let page = String::from_utf8(render(b"https://e.com/?a=1&b=<x>", 19_675)).unwrap();
        assert!(page.contains("<p class=\"url\">https://e.com/?a=1&amp;b=&lt;x&gt;</p>"));
        assert!(page.contains("href=\"https://e.com/?a=1&amp;b=&lt;x&gt;\""));
        assert!(page.contains("<time datetime=\"2023-11-14\">2023-11-14</time>"));
        assert!(!page.contains("<x>"));
        assert!(!page.contains("src="), "no external assets");
        let ftp = String::from_utf8(render(b"ftp://e.com/f", 0)).unwrap();
        assert!(ftp.contains("ftp://e.com/f") && !ftp.contains("href="));
        let upper = String::from_utf8(render(b"HTTPS://E.COM/", 0)).unwrap();
        assert!(upper.contains("href=\"HTTPS://E.COM/\""));
    }

    proptest! {
        #[test]
        fn escaped_text_holds_none_of_the_five(text in any::<Vec<u8>>()) {
            let mut out = Vec::new();
            escape_into(&text, &mut out);
            for b in [b'<', b'>', b'"', b'\''] {
                prop_assert!(!out.contains(&b));
            }
            // Every `&` starts one of the references written.
            for (i, _) in out.iter().enumerate().filter(|(_, &b)| b == b'&') {
                let rest = &out[i..];
                prop_assert!(
                    [&b"&amp;"[..], b"&lt;", b"&gt;", b"&quot;", b"&#39;"]
                        .iter()
                        .any(|r| rest.starts_with(r))
                );
            }
        }

        #[test]
        fn a_rendered_target_never_breaks_out(target in "[ -~]{0,80}", day in any::<u16>()) {
            let page = String::from_utf8(render(target.as_bytes(), day)).unwrap();
            let (_, body) = page.split_once("<p class=\"url\">").unwrap();
            let (shown, _) = body.split_once("</p>").unwrap();
            prop_assert_eq!(shown, escaped(&target));
        }

        #[test]
        fn no_code_or_alias_ends_in_an_accepted_suffix(
            suffix in "[!-~]{1,8}",
            code in "[0-9A-Za-z_-]{1,20}",
        ) {
            if let Ok(s) = parse_suffix(&suffix) {
                prop_assert!(!code.ends_with(s));
            }
        }
    }
}
