//! The link form shared by the create and edit pages: what it holds, how
//! it becomes a [`CreateLink`] or an [`UpdateLink`], its fields as HTML,
//! and link errors as messages next to those fields.

use maud::{html, Markup};
use shortlink_core::check_mode::CheckMode;
use shortlink_core::RedirectStatus;

use super::super::view::{self, FieldErrors};
use super::super::{AdminError, FormFields};
use crate::links::{CreateLink, LinkPassword, TargetsInput, TimeInput, UpdateLink};
use crate::store::{Link, LinkError};

/// What the create and edit forms hold, as typed (kept on errors).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkForm {
    /// Target URL.
    pub url: String,
    /// Alias; empty for none.
    pub alias: String,
    /// Expiry as `datetime-local` (UTC); empty for never.
    pub expires_at: String,
    /// Redirect status; empty for nginx's default.
    pub redirect: String,
    /// Visit limit; empty for none.
    pub max_visits: String,
    /// Desktop target; empty for none.
    pub desktop: String,
    /// Mobile target; empty for none.
    pub mobile: String,
    /// iOS target; empty for none.
    pub ios: String,
    /// Android target; empty for none.
    pub android: String,
    /// Tags separated by commas.
    pub tags: String,
    /// `on`, `off`, or empty for the location's `shortlink_forward_query`.
    pub forward_query: String,
    /// Country targets, `CC=URL` per line (or separated by spaces).
    pub country_targets: String,
    /// A new password for visitors; empty keeps (or, on create, sets
    /// none). Never filled in from the link, never shown back.
    pub password: LinkPassword,
    /// Remove the link's password (the edit form of a protected link).
    pub remove_password: bool,
    /// The link has a password (the edit form says so).
    pub protected: bool,
    /// A/B variants, `WEIGHT=URL` per line (or separated by spaces).
    pub variants: String,
    /// `off`, `report`, `fallback`, or empty for the site's checker settings.
    pub check: String,
    /// Title; empty for none.
    pub title: String,
}

/// What [`LinkForm::numbers`] reads from the form's text.
struct Numbers {
    redirect: Option<u16>,
    max_visits: Option<u64>,
    forward_query: Option<bool>,
    country_targets: std::collections::BTreeMap<String, String>,
    variants: Vec<crate::links::VariantInput>,
    check: Option<CheckMode>,
}

/// The choices of the link checker select: value, label.
const CHECK: [(&str, &str); 4] = [
    ("", "the site's [checker] settings"),
    ("off", "never probe this link"),
    ("report", "probe and report only"),
    (
        "fallback",
        "probe; send visitors to the fallback while it is dead",
    ),
];

/// The choices of the query-forwarding select: value, label.
const FORWARD_QUERY: [(&str, &str); 3] = [
    ("", "nginx decides (shortlink_forward_query)"),
    ("on", "append the visit's query string"),
    ("off", "never append it"),
];

impl LinkForm {
    /// The form as posted.
    pub fn from_fields(f: &FormFields) -> Self {
        Self {
            url: f.get("url"),
            alias: f.get("alias"),
            expires_at: f.get("expires_at"),
            redirect: f.get("redirect"),
            max_visits: f.get("max_visits"),
            desktop: f.get("targets.desktop"),
            mobile: f.get("targets.mobile"),
            ios: f.get("targets.ios"),
            android: f.get("targets.android"),
            tags: f.get("tags"),
            forward_query: f.get("forward_query"),
            country_targets: f.get("country_targets"),
            password: LinkPassword::new(f.get("password")),
            remove_password: !f.get("remove_password").is_empty(),
            protected: false,
            variants: f.get("variants"),
            check: f.get("check"),
            title: f.get("title"),
        }
    }

    /// The form filled in from a stored link (the edit page).
    pub fn from_link(l: &Link) -> Self {
        let s = |v: &Option<String>| v.clone().unwrap_or_default();
        Self {
            url: l.url.clone(),
            alias: s(&l.alias),
            expires_at: l.expires_at.map(view::datetime_local).unwrap_or_default(),
            redirect: l.redirect.map(|r| r.to_string()).unwrap_or_default(),
            max_visits: l.max_visits.map(|m| m.to_string()).unwrap_or_default(),
            desktop: s(&l.targets.desktop),
            mobile: s(&l.targets.mobile),
            ios: s(&l.targets.ios),
            android: s(&l.targets.android),
            tags: l.tags.join(", "),
            forward_query: match l.forward_query {
                None => String::new(),
                Some(true) => "on".into(),
                Some(false) => "off".into(),
            },
            country_targets: l
                .country_targets
                .iter()
                .map(|(c, u)| format!("{c}={u}"))
                .collect::<Vec<_>>()
                .join("\n"),
            password: LinkPassword::default(),
            remove_password: false,
            protected: l.password_hash.is_some(),
            variants: l
                .variants
                .iter()
                .map(|v| format!("{}={}", v.weight, v.url))
                .collect::<Vec<_>>()
                .join("\n"),
            check: l.check.map(|m| m.as_str().to_string()).unwrap_or_default(),
            title: s(&l.title),
        }
    }

    /// The password typed, if any.
    fn new_password(&self) -> Option<LinkPassword> {
        (!self.password.expose().is_empty()).then(|| self.password.clone())
    }

    fn opt(v: &str) -> Option<String> {
        (!v.is_empty()).then(|| v.to_string())
    }

    fn targets(&self) -> Option<TargetsInput> {
        let t = TargetsInput {
            desktop: Self::opt(&self.desktop),
            mobile: Self::opt(&self.mobile),
            ios: Self::opt(&self.ios),
            android: Self::opt(&self.android),
        };
        (t != TargetsInput::default()).then_some(t)
    }

    fn tags(&self) -> Vec<String> {
        self.tags
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// The numbers the form carries (the link rules judge their values)
    /// and its query-forwarding choice.
    fn numbers(&self) -> Result<Numbers, FieldErrors> {
        let mut errors = FieldErrors::new();
        let forward_query = match self.forward_query.as_str() {
            "" => None,
            "on" => Some(true),
            "off" => Some(false),
            f => {
                errors.insert(
                    "forward_query".into(),
                    format!("forward_query must be on, off or empty, not {f:?}"),
                );
                None
            }
        };
        let check = match self.check.as_str() {
            "" => None,
            m => match CheckMode::parse(m) {
                Ok(m) => Some(m),
                Err(e) => {
                    errors.insert("check".into(), e.to_string());
                    None
                }
            },
        };
        let redirect = match self.redirect.as_str() {
            "" => None,
            r => match r.parse::<u16>() {
                Ok(v) => Some(v),
                Err(_) => {
                    errors.insert(
                        "redirect".into(),
                        format!("redirect must be a status number, not {r:?}"),
                    );
                    None
                }
            },
        };
        let max_visits = match self.max_visits.as_str() {
            "" => None,
            m => match m.parse::<u64>() {
                Ok(v) => Some(v),
                Err(_) => {
                    errors.insert(
                        "max_visits".into(),
                        format!("max_visits must be a whole number; got {m:?}"),
                    );
                    None
                }
            },
        };
        let country_targets =
            match crate::links::csv_format::parse_country_targets_cell(&self.country_targets) {
                Ok(t) => t,
                Err(m) => {
                    errors.insert("country_targets".into(), format!("country_targets: {m}"));
                    Default::default()
                }
            };
        let variants = match crate::links::csv_format::parse_variants_cell(&self.variants) {
            Ok(v) => v,
            Err(m) => {
                errors.insert("variants".into(), format!("variants: {m}"));
                Vec::new()
            }
        };
        if errors.is_empty() {
            Ok(Numbers {
                redirect,
                max_visits,
                forward_query,
                country_targets,
                variants,
                check,
            })
        } else {
            Err(errors)
        }
    }

    /// The API's create request.
    pub fn to_create(&self) -> Result<CreateLink, FieldErrors> {
        let Numbers {
            redirect,
            max_visits,
            forward_query,
            country_targets,
            variants,
            check,
        } = self.numbers()?;
        Ok(CreateLink {
            url: self.url.clone(),
            alias: Self::opt(&self.alias),
            expires_at: Self::opt(&self.expires_at)
                .map(|e| TimeInput::Text(view::local_to_rfc3339(&e))),
            max_visits,
            redirect,
            targets: self.targets(),
            tags: Some(self.tags()),
            forward_query,
            country_targets: (!country_targets.is_empty()).then_some(country_targets),
            password: self.new_password(),
            variants: (!variants.is_empty()).then_some(variants),
            check,
            title: Self::opt(self.title.trim()),
            ..CreateLink::default()
        })
    }

    /// The API's patch: every field as shown; the expiry only when changed
    /// (so an expired link can be edited without moving its expiry).
    pub fn to_update(&self, current: &Link) -> Result<UpdateLink, FieldErrors> {
        let Numbers {
            redirect,
            max_visits,
            forward_query,
            country_targets,
            variants,
            check,
        } = self.numbers()?;
        let shown = current
            .expires_at
            .map(view::datetime_local)
            .unwrap_or_default();
        let expires_at = if self.expires_at == shown {
            None
        } else {
            Some(Self::opt(&self.expires_at).map(|e| TimeInput::Text(view::local_to_rfc3339(&e))))
        };
        Ok(UpdateLink {
            url: Some(self.url.clone()),
            alias: Some(Self::opt(&self.alias)),
            expires_at,
            max_visits: Some(max_visits),
            redirect: Some(redirect),
            targets: Some(self.targets()),
            tags: Some(self.tags()),
            forward_query: Some(forward_query),
            country_targets: Some((!country_targets.is_empty()).then_some(country_targets)),
            password: match (self.new_password(), self.remove_password) {
                (Some(p), _) => Some(Some(p)),
                (None, true) => Some(None),
                (None, false) => None,
            },
            variants: Some((!variants.is_empty()).then_some(variants)),
            check: Some(check),
            title: Some(Self::opt(self.title.trim())),
            ..UpdateLink::default()
        })
    }
}

/// A link error as messages by field; `""` holds what belongs to no field.
pub(super) fn link_errors(e: LinkError) -> Result<FieldErrors, AdminError> {
    let mut errors = FieldErrors::new();
    match e {
        LinkError::Invalid { field, message, .. } => {
            let field = match field {
                "ttl" | "renew_on_access" => "expires_at",
                f => f,
            };
            errors.insert(field.to_string(), message);
        }
        LinkError::AliasTaken(a) => {
            errors.insert("alias".into(), format!("alias \"{a}\" is already taken"));
        }
        e => return Err(e.into()),
    }
    Ok(errors)
}

/// The form's fields, with `errors` next to them.
pub(super) fn link_fields(form: &LinkForm, errors: &FieldErrors) -> Markup {
    let redirects: Vec<(String, String)> = std::iter::once((
        String::new(),
        "nginx default (shortlink_redirect)".to_string(),
    ))
    .chain(
        RedirectStatus::ALL
            .iter()
            .map(|s| (s.to_string(), format!("{s} {}", s.reason()))),
    )
    .collect();
    html! {
        (view::text_input("Target URL", "url", &form.url, "url", Some("Absolute http(s) URL."), errors))
        (view::text_input("Title (optional)", "title", &form.title, "text",
            Some("A name for the link, shown in lists and found by the search."), errors))
        div.row {
            (view::text_input("Alias (optional)", "alias", &form.alias, "text",
                Some("1 to 64 of A-Z a-z 0-9 - _; the generated code works too."), errors))
            (view::text_input("Expires (UTC, optional)", "expires_at", &form.expires_at,
                "datetime-local", Some("Empty: never."), errors))
        }
        div.row {
            div.field.invalid[errors.contains_key("redirect")] {
                label for="f-redirect" { "Redirect status" }
                select id="f-redirect" name="redirect" {
                    @for (v, label) in &redirects {
                        option value=(v) selected[form.redirect == *v] { (label) }
                    }
                    @if !form.redirect.is_empty() && !redirects.iter().any(|(v, _)| *v == form.redirect) {
                        option value=(form.redirect) selected { (form.redirect) }
                    }
                }
                (view::field_error(errors, "redirect"))
            }
            (view::text_input("Max visits (optional)", "max_visits", &form.max_visits, "text",
                Some("Human visits after which the link is gone."), errors))
        }
        div.field.invalid[errors.contains_key("forward_query")] {
            label for="f-forward-query" { "Visit's query string" }
            select id="f-forward-query" name="forward_query" {
                @for (v, label) in FORWARD_QUERY {
                    option value=(v) selected[form.forward_query == v] { (label) }
                }
            }
            p.hint { "Appended to the target (for UTM tags); the link's choice wins over nginx's." }
            (view::field_error(errors, "forward_query"))
        }
        div.field.invalid[errors.contains_key("check")] {
            label for="f-check" { "Link checker" }
            select id="f-check" name="check" {
                @for (v, label) in CHECK {
                    option value=(v) selected[form.check == v] { (label) }
                }
            }
            p.hint { "Whether the background checker probes this link's target, and whether a dead target sends visitors to the fallback." }
            (view::field_error(errors, "check"))
        }
        fieldset {
            legend { "Device targets (optional)" }
            div.row {
                (view::text_input("Desktop", "targets.desktop", &form.desktop, "url", None, errors))
                (view::text_input("Mobile", "targets.mobile", &form.mobile, "url", None, errors))
            }
            div.row {
                (view::text_input("iOS", "targets.ios", &form.ios, "url", None, errors))
                (view::text_input("Android", "targets.android", &form.android, "url", None, errors))
            }
        }
        div.field.invalid[errors.contains_key("country_targets")] {
            label for="f-country-targets" { "Country targets (optional)" }
            textarea id="f-country-targets" name="country_targets" rows="3" spellcheck="false"
                placeholder="DE=https://example.de/" { (form.country_targets) }
            p.hint { "One " code { "CC=URL" } " per line (ISO 3166-1 alpha-2 code, at most 16), from nginx's " code { "shortlink_country" } "; chosen before the device targets." }
            (view::field_error(errors, "country_targets"))
        }
        div.field.invalid[errors.contains_key("password")] {
            label for="f-link-password" { "Password (optional)" }
            // Never filled in: the password is not kept, only its hash.
            input id="f-link-password" name="password" type="password" autocomplete="new-password" value="";
            p.hint {
                @if form.protected {
                    "This link is protected. Type a new password to replace it."
                } @else {
                    "Visitors must type it before they are sent on. Stored as a hash, never shown."
                }
            }
            (view::field_error(errors, "password"))
        }
        @if form.protected {
            div.field {
                label {
                    input id="f-remove-password" type="checkbox" name="remove_password" value="1" checked[form.remove_password];
                    " Remove the password"
                }
            }
        }
        div.field.invalid[errors.contains_key("variants")] {
            label for="f-variants" { "A/B variants (optional)" }
            textarea id="f-variants" name="variants" rows="3" spellcheck="false"
                placeholder="3=https://example.com/a" { (form.variants) }
            p.hint { "One " code { "WEIGHT=URL" } " per line (weight 1 to 65535, at most 8); each visit gets one by weight, instead of the URL above. Country and device targets win." }
            (view::field_error(errors, "variants"))
        }
        (view::text_input("Tags (optional)", "tags", &form.tags, "text", Some("Separated by commas."), errors))
    }
}

/// The note above a form that was not saved.
pub(super) fn general_error(errors: &FieldErrors) -> Markup {
    html! {
        @if !errors.is_empty() {
            p.error role="alert" id="form-error" {
                "The link was not saved: see the messages below."
                @if let Some(m) = errors.get("") { " " (m) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_become_api_requests() {
        let form = LinkForm {
            url: "https://example.com/".into(),
            alias: "".into(),
            expires_at: "2030-01-02T03:04".into(),
            redirect: "301".into(),
            max_visits: "".into(),
            mobile: "https://m.example.com/".into(),
            tags: " a, b ,,c ".into(),
            ..LinkForm::default()
        };
        let c = form.to_create().unwrap();
        assert_eq!(c.alias, None);
        assert_eq!(
            c.expires_at,
            Some(TimeInput::Text("2030-01-02T03:04:00Z".into()))
        );
        assert_eq!(c.redirect, Some(301));
        assert_eq!(c.tags, Some(vec!["a".into(), "b".into(), "c".into()]));
        let t = c.targets.unwrap();
        assert_eq!(t.mobile.as_deref(), Some("https://m.example.com/"));
        assert_eq!(t.desktop, None);

        let bad = LinkForm {
            redirect: "x".into(),
            max_visits: "-1".into(),
            ..form.clone()
        };
        let e = bad.to_create().unwrap_err();
        assert!(e.contains_key("redirect") && e.contains_key("max_visits"));
        let odd = LinkForm {
            forward_query: "maybe".into(),
            ..form.clone()
        };
        assert!(odd.to_create().unwrap_err().contains_key("forward_query"));
        for (v, want) in [("", None), ("on", Some(true)), ("off", Some(false))] {
            let f = LinkForm {
                forward_query: v.into(),
                ..form.clone()
            };
            assert_eq!(f.to_create().unwrap().forward_query, want, "{v:?}");
            let link = Link {
                forward_query: want,
                ..Link::default()
            };
            assert_eq!(LinkForm::from_link(&link).forward_query, v);
            assert_eq!(f.to_update(&link).unwrap().forward_query, Some(want));
        }
        let odd = LinkForm {
            check: "sometimes".into(),
            ..form.clone()
        };
        assert!(odd.to_create().unwrap_err().contains_key("check"));
        for (v, want) in [
            ("", None),
            ("off", Some(CheckMode::Off)),
            ("report", Some(CheckMode::Report)),
            ("fallback", Some(CheckMode::Fallback)),
        ] {
            let f = LinkForm {
                check: v.into(),
                ..form.clone()
            };
            assert_eq!(f.to_create().unwrap().check, want, "{v:?}");
            let link = Link {
                check: want,
                ..Link::default()
            };
            assert_eq!(LinkForm::from_link(&link).check, v);
            assert_eq!(f.to_update(&link).unwrap().check, Some(want));
        }

        // Unchanged expiry is left alone; cleared becomes null.
        let link = Link {
            url: "https://example.com/".into(),
            expires_at: Some(1_900_000_000),
            ..Link::default()
        };
        let same = LinkForm::from_link(&link);
        assert_eq!(same.to_update(&link).unwrap().expires_at, None);
        let cleared = LinkForm {
            expires_at: "".into(),
            ..same.clone()
        };
        assert_eq!(cleared.to_update(&link).unwrap().expires_at, Some(None));
        let u = same.to_update(&link).unwrap();
        assert_eq!(u.alias, Some(None));
        assert_eq!(u.targets, Some(None));
    }
}
