//! `POST /api/v1/links/batch`: up to 10,000 creates in one transaction,
//! answered item by item with the full link or, with `?results=short`,
//! with its code and short URL alone.

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::super::error::{ApiError, ErrorBody, ErrorDetail};
use super::super::extract::{ApiJson, ApiQuery};
use super::base;
use crate::access::Scope;
use crate::app::SharedApp;
use crate::auth::Principal;
use crate::codes;
use crate::links::{self, CreateLink, Created, LinkView};
use crate::store::{Link, LinkError};

/// Body of `POST /api/v1/links/batch`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchRequest {
    /// Up to 10,000 link requests, each shaped like `POST /api/v1/links`.
    // Kept as raw JSON text until each is parsed into a `CreateLink` on
    // its own (an item that does not parse fails alone), with no
    // `serde_json::Value` tree in between.
    #[schema(value_type = Vec<CreateLink>)]
    pub links: Vec<Box<serde_json::value::RawValue>>,
}

/// How each item of the reply shows its link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum BatchResults {
    /// The whole link, as `GET /api/v1/links/{code}` shows it.
    #[default]
    Full,
    /// Only `code` and `short_url`: about a seventh of the bytes, for
    /// clients that only send the short URLs on.
    Short,
}

/// About what one item of each kind of reply takes: a created link with
/// a 100-byte URL and no options, then its code and short URL alone.
const FULL_ITEM_BYTES: usize = 700;
const SHORT_ITEM_BYTES: usize = 96;

/// Query of `POST /api/v1/links/batch`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct BatchParams {
    /// `full` (default) or `short`.
    pub results: Option<BatchResults>,
}

/// One batch item parsed like the body of a single create; the error
/// without serde's position (which would count within the item).
fn parse_item(raw: &serde_json::value::RawValue) -> Result<CreateLink, ApiError> {
    serde_json::from_str::<CreateLink>(raw.get()).map_err(|e| {
        let text = e.to_string();
        let msg = match text.rfind(" at line ") {
            Some(at) if e.line() > 0 => text[..at].to_string(),
            _ => text,
        };
        let mut err = ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_body", msg);
        err.field = super::super::error::serde_field(&err.message);
        err
    })
}

/// The outcome of one batch item.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct BatchItem {
    /// Position in the request.
    pub index: usize,
    /// What a single create would have answered: 201, 200 (dedupe), 409 or 422.
    pub status: u16,
    /// The created or existing link, when the item succeeded; absent with
    /// `results=short`.
    pub link: Option<LinkView>,
    /// With `results=short`, when the item succeeded: the link's code
    /// (its alias if set, else the generated code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// With `results=short`, when the item succeeded: the public short URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_url: Option<String>,
    /// Why the item failed, when it did.
    pub error: Option<ErrorDetail>,
}

/// An item of a `results=short` reply: what [`BatchItem`] documents,
/// without the fields that would be null.
#[derive(Debug, Serialize)]
struct ShortItem {
    index: usize,
    status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    short_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorDetail>,
}

/// Reply of `POST /api/v1/links/batch`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct BatchResponse<I = BatchItem> {
    /// New links.
    pub created: usize,
    /// Existing links returned by `dedupe`.
    pub existing: usize,
    /// Items refused.
    pub failed: usize,
    /// One result per item, in request order.
    #[schema(value_type = Vec<BatchItem>)]
    pub results: Vec<I>,
}

impl<I: Serialize> BatchResponse<I> {
    /// Counts the outcomes and makes one item of each with `item` (given
    /// the position, the status a single create would answer, and the
    /// link or the error).
    fn of(
        outcomes: impl ExactSizeIterator<Item = Result<Created, ApiError>>,
        item: impl Fn(usize, u16, Result<&Link, ErrorDetail>) -> I,
    ) -> Self {
        let mut out = BatchResponse {
            created: 0,
            existing: 0,
            failed: 0,
            results: Vec::with_capacity(outcomes.len()),
        };
        for (index, outcome) in outcomes.enumerate() {
            let entry = match &outcome {
                Ok(Created::New(l)) => {
                    out.created += 1;
                    item(index, 201, Ok(l))
                }
                Ok(Created::Existing(l)) => {
                    out.existing += 1;
                    item(index, 200, Ok(l))
                }
                Err(e) => {
                    out.failed += 1;
                    item(index, e.status.as_u16(), Err(e.detail()))
                }
            };
            out.results.push(entry);
        }
        out
    }

    /// A batch of which nothing was taken failed as a whole: 422, with the
    /// same per-item body, so a client need not count to notice.
    ///
    /// The body is written into a buffer sized up front for about
    /// `item_bytes` an item: axum's `Json` starts small and doubles, which
    /// for a 10,000-item reply of whole links (~7 MB) meant a dozen
    /// reallocations, each copying the reply so far into fresh pages.
    fn into_response(self, item_bytes: usize) -> Response {
        let status = if self.failed > 0 && self.created == 0 && self.existing == 0 {
            StatusCode::UNPROCESSABLE_ENTITY
        } else {
            StatusCode::OK
        };
        let mut body = Vec::with_capacity(64 + self.results.len() * item_bytes);
        match serde_json::to_writer(&mut body, &self) {
            Ok(()) => (status, [(header::CONTENT_TYPE, "application/json")], body).into_response(),
            Err(e) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string())
                .into_response(),
        }
    }
}

/// Creates up to 10,000 links in one transaction.
#[utoipa::path(
    post, path = "/api/v1/links/batch", operation_id = "create_links_batch", tag = "links",
    request_body = BatchRequest,
    params(BatchParams,
           ("X-Shortlink-Base" = Option<String>, Header, description = "Public base of short URLs, set by nginx")),
    responses(
        (status = 200, description = "Per-item results in order; good items are committed even when others fail", body = BatchResponse),
        (status = 400, description = "Malformed JSON, or a bad query (`invalid_query`)", body = ErrorBody),
        (status = 422, description = "Body is not `{\"links\": [...]}` (a problem document), or every item failed (the per-item results, nothing committed)", content(
            (ErrorBody = "application/problem+json"),
            (BatchResponse = "application/json"),
        )),
        (status = 401, description = "Missing or invalid credentials", body = ErrorBody),
        (status = 403, description = "Lacks `links:write`", body = ErrorBody),
        (status = 413, description = "More than 10,000 items (`batch_too_large`)", body = ErrorBody),
        (status = 500, description = "Internal error", body = ErrorBody),
    ),
    security(("api_key" = []), ("app_id" = [], "app_timestamp" = [], "app_signature" = []))
)]
pub async fn create_batch(
    State(app): State<SharedApp>,
    Extension(p): Extension<Principal>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<BatchParams>,
    ApiJson(req): ApiJson<BatchRequest>,
) -> Result<Response, ApiError> {
    p.require(Scope::LinksWrite)?;
    if req.links.len() > links::MAX_BATCH {
        return Err(LinkError::BatchTooLarge {
            got: req.links.len(),
            max: links::MAX_BATCH,
        }
        .into());
    }
    // Items that do not even parse fail alone.
    let mut good: Vec<CreateLink> = Vec::with_capacity(req.links.len());
    let parsed: Vec<Result<(), ApiError>> = req
        .links
        .iter()
        .map(|raw| parse_item(raw).map(|item| good.push(item)))
        .collect();
    drop(req);
    let mut results = app
        .links()
        .acting_as(&p)
        .create_batch(&good, Some(&p.who))
        .await?
        .into_iter();
    drop(good);
    let outcomes = parsed.into_iter().map(|item| {
        item.and_then(|()| {
            let r = results.next().expect("one result per parsed item");
            r.map_err(ApiError::from)
        })
    });
    let base = base(&app, &headers);
    Ok(match q.results.unwrap_or_default() {
        BatchResults::Full => BatchResponse::of(outcomes, |index, status, r| BatchItem {
            index,
            status,
            link: r.as_ref().ok().map(|l| LinkView::new(&app.codec, l, &base)),
            code: None,
            short_url: None,
            error: r.err(),
        })
        .into_response(FULL_ITEM_BYTES),
        BatchResults::Short => BatchResponse::of(outcomes, |index, status, r| {
            let code = r.as_ref().ok().map(|l| codes::public(&app.codec, l));
            ShortItem {
                index,
                status,
                short_url: code.as_deref().map(|c| LinkView::short_url(&base, c)),
                code,
                error: r.err(),
            }
        })
        .into_response(SHORT_ITEM_BYTES),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_item_reads_back_as_the_documented_item() {
        let ok = ShortItem {
            index: 0,
            status: 201,
            code: Some("abc".into()),
            short_url: Some("https://s.example/abc".into()),
            error: None,
        };
        let text = serde_json::to_string(&ok).unwrap();
        assert_eq!(
            text,
            r#"{"index":0,"status":201,"code":"abc","short_url":"https://s.example/abc"}"#
        );
        let back: BatchItem = serde_json::from_str(&text).unwrap();
        assert_eq!(back.code.as_deref(), Some("abc"));
        assert!(back.link.is_none() && back.error.is_none());
    }
}
