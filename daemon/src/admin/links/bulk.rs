//! Bulk create from the browser: `GET /admin/bulk` and its form's
//! `POST`. One link per line, `URL` or `URL alias`; the lines go through
//! [`crate::links::Links::create_batch`], the API's batch create, in one
//! transaction, and the page answers each line: its short URL, or why it
//! was refused, by line number.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::{html, Markup};

use super::super::view::{self, Nav, Page};
use super::super::{AdminError, AdminState, Authed, FormFields};
use crate::codes;
use crate::links::{CreateLink, MAX_BATCH};
use crate::store::LinkError;

/// One non-empty line of the form.
#[derive(Debug, Clone)]
struct Line {
    /// 1-based, counting blank lines too, as the textarea shows them.
    number: usize,
    /// The line as typed, trimmed.
    text: String,
    /// The request it makes, or why it makes none.
    request: Result<CreateLink, String>,
}

/// What became of one line.
#[derive(Debug)]
enum Outcome {
    /// The line's link, by its public code.
    Created(String),
    /// Refused, with the message.
    Refused(String),
}

/// The lines of `text` that hold something: `URL` or `URL alias`.
fn parse_lines(text: &str) -> Vec<Line> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let request = match words[..] {
                [url] => Ok(CreateLink {
                    url: url.to_string(),
                    ..CreateLink::default()
                }),
                [url, alias] => Ok(CreateLink {
                    url: url.to_string(),
                    alias: Some(alias.to_string()),
                    ..CreateLink::default()
                }),
                _ => Err(format!(
                    "expected \"URL\" or \"URL alias\", found {} words",
                    words.len()
                )),
            };
            Line {
                number: i + 1,
                text: l.trim().to_string(),
                request,
            }
        })
        .collect()
}

/// The message a refused line shows.
fn refusal(e: &LinkError) -> String {
    match e {
        LinkError::Invalid { message, .. } => message.clone(),
        e => e.to_string(),
    }
}

fn page(a: &Authed, text: &str, error: Option<&str>, results: Option<Markup>) -> Page {
    view::layout(
        "Bulk create",
        Some(a),
        Nav::Links,
        None,
        html! {
            h1 { "Bulk create" }
            @if let Some(r) = results { (r) }
            div.card {
                @if let Some(e) = error { p.error role="alert" id="form-error" { (e) } }
                form method="post" action="/admin/bulk" id="bulk" novalidate {
                    (view::csrf_field(a))
                    div.field {
                        label for="f-lines" { "Links, one per line" }
                        textarea id="f-lines" name="lines" rows="12" spellcheck="false"
                            placeholder="https://example.com/spring-sale spring-sale\nhttps://example.com/docs" { (text) }
                        p.hint { "Each line: a target URL, optionally followed by a space and an alias. Up to 10,000 lines. "
                            "Every line is checked like a single create; the good ones are stored even when others are refused." }
                    }
                    button.primary type="submit" { "Create links" }
                }
            }
        },
    )
}

/// GET `/admin/bulk`.
pub async fn bulk_form(a: Authed) -> Page {
    page(&a, "", None, None)
}

fn results_table(a: &Authed, lines: &[Line], outcomes: &[Outcome]) -> Markup {
    let created = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Created(_)))
        .count();
    let refused = outcomes.len() - created;
    html! {
        div.card id="bulk-results" {
            p id="bulk-summary" {
                strong { (created) } " created, " strong { (refused) } " refused."
            }
            table.links {
                thead { tr { th.num { "Line" } th { "Input" } th { "Result" } } }
                tbody {
                    @for (line, outcome) in lines.iter().zip(outcomes) {
                        @match outcome {
                            Outcome::Created(code) => tr.ok data-line=(line.number) {
                                td.num { (line.number) }
                                td.target { (line.text) }
                                td { a.code href={ "/admin/links/" (code) } data-code=(code) { (a.base) "/" (code) } }
                            },
                            Outcome::Refused(m) => tr.refused data-line=(line.number) {
                                td.num { (line.number) }
                                td.target { (line.text) }
                                td.field-error { "line " (line.number) ": " (m) }
                            },
                        }
                    }
                }
            }
        }
    }
}

/// POST `/admin/bulk`: the lines through the batch create; 200 with
/// a result per line, 422 when there is nothing to create.
pub async fn bulk_create(
    State(admin): State<AdminState>,
    a: Authed,
    fields: FormFields,
) -> Result<Response, AdminError> {
    a.may(crate::access::Scope::LinksWrite)?;
    let text = fields.raw("lines");
    let lines = parse_lines(&text);
    if lines.is_empty() {
        let p = page(&a, &text, Some("Type at least one URL."), None);
        return Ok((StatusCode::UNPROCESSABLE_ENTITY, p).into_response());
    }
    if lines.len() > MAX_BATCH {
        let e = LinkError::BatchTooLarge {
            got: lines.len(),
            max: MAX_BATCH,
        }
        .to_string();
        let p = page(&a, &text, Some(&e), None);
        return Ok((StatusCode::PAYLOAD_TOO_LARGE, p).into_response());
    }
    let good: Vec<CreateLink> = lines
        .iter()
        .filter_map(|l| l.request.as_ref().ok().cloned())
        .collect();
    admin.app.rules.served.remember(&a.base);
    let who = a.principal().who;
    let mut results = admin
        .app
        .links()
        .acting_as(&a.principal())
        .create_batch(&good, Some(&who))
        .await?
        .into_iter();
    let codec = &admin.app.codec;
    let outcomes: Vec<Outcome> = lines
        .iter()
        .map(|l| match &l.request {
            Err(m) => Outcome::Refused(m.clone()),
            Ok(_) => match results.next() {
                Some(Ok(made)) => Outcome::Created(codes::public(codec, made.link())),
                Some(Err(e)) => Outcome::Refused(refusal(&e)),
                None => Outcome::Refused("no result for this line".into()),
            },
        })
        .collect();
    let created = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Created(_)))
        .count();
    tracing::info!(lines = lines.len(), created, user = %a.user, "bulk create in the admin UI");
    // The form keeps only the refused lines, to fix and send again.
    let again: Vec<&str> = lines
        .iter()
        .zip(&outcomes)
        .filter(|(_, o)| matches!(o, Outcome::Refused(_)))
        .map(|(l, _)| l.text.as_str())
        .collect();
    let table = results_table(&a, &lines, &outcomes);
    Ok(page(&a, &again.join("\n"), None, Some(table)).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_urls_with_an_optional_alias() {
        let lines = parse_lines("https://a.example/\n\n  https://b.example/ bee \nx y z\n");
        let numbers: Vec<usize> = lines.iter().map(|l| l.number).collect();
        assert_eq!(
            numbers,
            vec![1, 3, 4],
            "blank lines count, but make nothing"
        );
        let a = lines[0].request.as_ref().unwrap();
        assert_eq!(
            (a.url.as_str(), a.alias.as_deref()),
            ("https://a.example/", None)
        );
        let b = lines[1].request.as_ref().unwrap();
        assert_eq!(b.alias.as_deref(), Some("bee"));
        assert_eq!(lines[1].text, "https://b.example/ bee");
        assert_eq!(
            lines[2].request.as_ref().unwrap_err(),
            "expected \"URL\" or \"URL alias\", found 3 words"
        );
        assert!(parse_lines(" \n\t\n").is_empty());
    }

    #[test]
    fn refusals_read_as_the_api_words_them() {
        let e = LinkError::AliasTaken("bee".into());
        assert_eq!(refusal(&e), "alias \"bee\" is already taken");
        let e = crate::store::links::invalid("url", "invalid_url", "url must be http or https");
        assert_eq!(refusal(&e), "url must be http or https");
    }
}
