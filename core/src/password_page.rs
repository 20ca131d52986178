//! The password form of a protected link, as the module answers it with no
//! I/O: the page (no target, no external asset, the message escaped), its
//! headers' values, the posted body's one field, and the cookie that lets
//! a visitor who gave the password through later (signed with
//! [`crate::edge_cookie`] under [`crate::edge_cookie::PASSWORD_PURPOSE`]).
//!
//! The form has no `action`: it posts to the URL it was shown at, so it
//! works under any location prefix and for the code and the alias alike.

use crate::preview::escape_into;

/// The form page's `Content-Security-Policy`: nothing loaded, nothing
/// run, the inline style only, and the form may post to this origin only.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The page's `Content-Type`.
pub const CONTENT_TYPE: &str = "text/html; charset=utf-8";

/// The cookie's name; it is scoped to the link's path, so one name serves
/// every link.
pub const COOKIE_NAME: &str = "shortlink_pw";

/// The tag of a stored password hash: what the edge learns of a protected
/// link's password ([`crate::ipc::EdgeLink::password_tag`]) and what the
/// visitor's cookie carries. Every new password gets a new salt and so a
/// new hash and tag, so a cookie given for the old password stops passing.
/// 32 bits of a digest of the hash: nothing about the password itself.
pub fn password_tag(stored_hash: &str) -> u32 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::new()
        .chain_update(b"shortlink password tag\0")
        .chain_update(stored_hash.as_bytes())
        .finalize();
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])
}

/// The value of the cookie given for link `id` and its password's `tag`:
/// the cookie's MAC binds it to the code it was given at, this to the link
/// behind the code then and its password then (an alias given to another
/// link, or a password changed, no longer passes).
pub fn cookie_value(id: u64, tag: u32) -> String {
    format!("{id:x}-{tag:08x}")
}

/// True when `value` is [`cookie_value`] of `id` and `tag`; no allocation
/// (the edge checks it per request).
pub fn cookie_matches(value: &str, id: u64, tag: u32) -> bool {
    let Some((id_hex, tag_hex)) = value.split_once('-') else {
        return false;
    };
    tag_hex.len() == 8
        && !id_hex.is_empty()
        && id_hex.len() <= 16
        && u64::from_str_radix(id_hex, 16) == Ok(id)
        && u32::from_str_radix(tag_hex, 16) == Ok(tag)
}

/// Largest form body read (the password field is at most 1024 bytes, each
/// escaped to 3): a bigger one is answered 413 before it is read.
pub const MAX_FORM_BODY: usize = 4096;

/// Longest password sent to the daemon (as its API allows).
pub const MAX_PASSWORD: usize = crate::ipc::MAX_PASSWORD;

const HEAD: &str = "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<meta name=\"robots\" content=\"noindex\"><title>Password required</title>\
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:28em;margin:4em auto;padding:0 1em;color:#222}\
input{font:inherit;padding:.4em;width:100%;box-sizing:border-box;margin:.5em 0}\
button{font:inherit;padding:.4em 1.2em}.msg{color:#a00}</style></head><body><main>\
<h1>Password required</h1><p>This link is protected. Enter its password to continue.</p>";

/// The form, with `message` (escaped) above it when the last try failed.
pub fn render(message: Option<&str>) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEAD.len() + 400);
    out.extend_from_slice(HEAD.as_bytes());
    if let Some(m) = message {
        out.extend_from_slice(b"<p class=\"msg\" role=\"alert\">");
        escape_into(m.as_bytes(), &mut out);
        out.extend_from_slice(b"</p>");
    }
    out.extend_from_slice(
        b"<form method=\"post\"><label for=\"password\">Password</label>\
<input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"current-password\" required autofocus>\
<button type=\"submit\">Continue</button></form></main></body></html>\n",
    );
    out
}

/// The preview of a protected link: says only that it is protected.
pub fn render_preview() -> Vec<u8> {
    let mut out = Vec::with_capacity(HEAD.len() + 64);
    out.extend_from_slice(HEAD.as_bytes());
    out.extend_from_slice(b"</main></body></html>\n");
    out
}

/// The `password` field of an `application/x-www-form-urlencoded` body,
/// decoded (`+` is a space, `%XX` a byte); `None` when it is missing,
/// empty, longer than [`MAX_PASSWORD`], badly escaped or not UTF-8.
pub fn password_of(body: &[u8]) -> Option<String> {
    let value = body.split(|&b| b == b'&').find_map(|pair| {
        let (name, value) = match pair.iter().position(|&b| b == b'=') {
            Some(i) => (&pair[..i], &pair[i + 1..]),
            None => (pair, &[][..]),
        };
        (name == b"password").then_some(value)
    })?;
    let mut out = Vec::with_capacity(value.len());
    let mut i = 0;
    while i < value.len() {
        match value[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = value.get(i + 1..i + 3)?;
                let text = std::str::from_utf8(hex).ok()?;
                out.push(u8::from_str_radix(text, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    if out.is_empty() || out.len() > MAX_PASSWORD {
        return None;
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_cookie_value_binds_the_link_and_its_password() {
        let tag = password_tag("$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA");
        assert_ne!(
            tag,
            password_tag("$argon2id$v=19$m=19456,t=2,p=1$c2FsdB$aGFzaA")
        );
        let v = cookie_value(0x1f3, tag);
        assert!(cookie_matches(&v, 0x1f3, tag), "{v}");
        assert!(!cookie_matches(&v, 0x1f4, tag), "another link");
        assert!(!cookie_matches(&v, 0x1f3, tag ^ 1), "another password");
        for bad in [
            "ok",
            "",
            "-",
            "1f3-",
            "-00000001",
            "1f3-1",
            "1f3-0000000g",
            "x-00000000",
        ] {
            assert!(!cookie_matches(bad, 0x1f3, 1), "{bad:?}");
        }
        assert!(v.len() <= crate::edge_cookie::MAX_VALUE_LEN);
    }

    use super::*;

    #[test]
    fn the_form_posts_to_its_own_url_and_escapes_the_message() {
        let page = String::from_utf8(render(Some("<b>wrong</b> & \"again\""))).unwrap();
        assert!(page.contains("<form method=\"post\">"), "{page}");
        assert!(!page.contains("action="), "{page}");
        assert!(
            page.contains("&lt;b&gt;wrong&lt;/b&gt; &amp; &quot;again&quot;"),
            "{page}"
        );
        assert!(!page.contains("<b>"), "{page}");
        assert!(!page.contains("http"), "no external asset: {page}");
        let plain = String::from_utf8(render(None)).unwrap();
        assert!(!plain.contains("class=\"msg\""));
        let preview = String::from_utf8(render_preview()).unwrap();
        assert!(preview.contains("protected") && !preview.contains("<form"));
    }

    #[test]
    fn the_password_field_is_decoded() {
        assert_eq!(
            password_of(b"password=open+sesame").as_deref(),
            Some("open sesame")
        );
        assert_eq!(
            password_of(b"x=1&password=a%26b%3D%C3%A9&y=2").as_deref(),
            Some("a&b=\u{e9}")
        );
        for bad in [
            &b""[..],
            b"password=",
            b"pass=x",
            b"password=%",
            b"password=%zz",
            b"password=%ff",
        ] {
            assert_eq!(password_of(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
        let long = format!("password={}", "a".repeat(MAX_PASSWORD + 1));
        assert_eq!(password_of(long.as_bytes()), None);
    }
}
