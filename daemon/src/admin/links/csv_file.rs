//! CSV import and export from the browser: `GET /admin/csv` (the
//! page), `POST /admin/csv/import` (an uploaded file through
//! [`crate::links::Links::import`], the CLI's import, with a summary) and
//! `GET /admin/csv/export.csv` (every link in the columns of
//! [`crate::links::csv_format`], what `shortlinkd export` writes).

use axum::body::{Body, Bytes};
use axum::extract::{Multipart, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use http_body_util::channel::{Channel, Sender};
use maud::{html, Markup};

use super::super::view::{self, Nav, Page};
use super::super::{AdminError, AdminState, Authed};
use crate::links::csv_format;
use crate::links::import::formats::{DomainCodes, Format};
use crate::links::{ImportError, ImportRow, LinkView, MAX_IMPORT};
use crate::store::{Link, ListQuery};
use crate::timestamp::unix_now;

/// Links read per page of an export.
const EXPORT_PAGE: u32 = 1000;

/// What an upload did, over every import call it took.
#[derive(Debug, Default)]
struct Summary {
    /// The file's name, as the browser sent it.
    file: String,
    /// New links.
    imported: usize,
    /// Rows equal to a link already stored, skipped.
    present: usize,
    /// Refused rows (unreadable ones and refused links), by line.
    errors: Vec<ImportError>,
}

fn page(a: &Authed, summary: Option<&Summary>, error: Option<&str>) -> Page {
    view::layout(
        "CSV import and export",
        Some(a),
        Nav::Links,
        None,
        html! {
            h1 { "CSV import and export" }
            @if let Some(s) = summary { (summary_card(s)) }
            div.card {
                h2 { "Import" }
                @if let Some(e) = error { p.error role="alert" id="form-error" { (e) } }
                form method="post" action="/admin/csv/import" enctype="multipart/form-data" id="import" {
                    // First, so the CSRF check reads it before the file.
                    (view::csrf_field(a))
                    div.field {
                        label for="f-file" { "CSV file" }
                        input id="f-file" type="file" name="file" accept=".csv,text/csv";
                        p.hint { "A header row naming the columns: " code { "url" } " (required), "
                            code { "alias" } ", " code { "expires_at" } ", " code { "tags" } ", "
                            code { "redirect" } ", " code { "max_visits" } ", " code { "disabled" } ", " code { "forward_query" } ", " code { "country_targets" } ", " code { "variants" } ", "
                            code { "created_at" } ", " code { "target_desktop" } " … as the export writes them. "
                            "A row equal to a live link already stored (same URL and options, or the same alias and URL) is skipped and counted as already present, so importing a file again adds nothing new." }
                    }
                    button.primary type="submit" { "Import" }
                }
            }
            div.card {
                h2 { "Export" }
                p { "Every link, with its codes, targets, options, tags, creation time and clicks, in the format "
                    code { "shortlinkd export" } " writes and " code { "shortlinkd import" } " reads." }
                a.button href="/admin/csv/export.csv" download="shortlinks.csv" id="export" { "Download CSV" }
            }
        },
    )
}

fn summary_card(s: &Summary) -> Markup {
    html! {
        div.card id="import-summary" {
            h2 { "Imported " (s.file) }
            p {
                strong id="imported" { (s.imported) } " imported, "
                strong id="present" { (s.present) } " already present, "
                strong id="import-errors" { (s.errors.len()) } " refused."
            }
            @if !s.errors.is_empty() {
                table.links id="import-error-rows" {
                    thead { tr { th.num { "Line" } th { "Field" } th { "Why" } } }
                    tbody {
                        @for e in &s.errors {
                            tr data-line=(e.line) {
                                td.num { (e.line) }
                                td { @if let Some(f) = &e.field { code { (f) } } }
                                td.field-error { (e.message) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// GET `/admin/csv`.
pub async fn csv_page(a: Authed) -> Page {
    page(&a, None, None)
}

/// The rows of a CSV file, and the lines that could not be read.
fn read_rows(data: &[u8]) -> Result<(Vec<ImportRow>, Vec<ImportError>), String> {
    let mut reader = csv_format::reader(data);
    let header = reader
        .headers()
        .map_err(|e| format!("the first line is not a CSV header: {e}"))?
        .clone();
    let format = Format::detect(&header).ok_or(
        "the header names no known format: ours has a `url` column; Bitly's, Shlink's, YOURLS's and Kutt's exports are known by theirs",
    )?;
    let columns = format.columns(&header)?;
    let (mut rows, mut bad) = (Vec::new(), Vec::new());
    // Shlink's same code on two domains: the later rows under `code-domain`.
    let mut domains = DomainCodes::default();
    let refused = |line, message| ImportError {
        line,
        field: None,
        message,
    };
    for record in reader.records() {
        match record {
            Ok(r) => {
                let line = r.position().map_or(0, |p| p.line());
                match columns.read(line, &r) {
                    Ok(mut row) => {
                        domains.place(&columns, &r, &mut row);
                        rows.push(row)
                    }
                    Err(e) => bad.push(refused(line, format!("{}: {}", e.column, e.message))),
                }
            }
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line());
                bad.push(refused(line, e.to_string()));
            }
        }
    }
    Ok((rows, bad))
}

/// The uploaded file: its name and bytes.
async fn upload(mut form: Multipart) -> Result<(String, Bytes), String> {
    let unreadable = |e: axum::extract::multipart::MultipartError| {
        format!("the upload could not be read: {}", e.body_text())
    };
    while let Some(field) = form.next_field().await.map_err(unreadable)? {
        if field.name() == Some("file") {
            let name = field.file_name().unwrap_or("the file").to_string();
            let data = field.bytes().await.map_err(unreadable)?;
            return Ok((name, data));
        }
    }
    Err("Choose a CSV file to import.".into())
}

/// POST `/admin/csv/import` (multipart, its CSRF field checked by the
/// middleware): the file's rows through the CLI's import, in calls of at
/// most [`MAX_IMPORT`] rows, then the summary.
pub async fn import_csv(
    State(admin): State<AdminState>,
    a: Authed,
    form: Multipart,
) -> Result<Response, AdminError> {
    a.may(crate::access::Scope::LinksWrite)?;
    let refused =
        |m: &str| Ok((StatusCode::UNPROCESSABLE_ENTITY, page(&a, None, Some(m))).into_response());
    let (file, data) = match upload(form).await {
        Ok(f) => f,
        Err(m) => return refused(&m),
    };
    if data.is_empty() {
        return refused(&format!("{file} is empty."));
    }
    let (rows, unreadable) = match read_rows(&data) {
        Ok(r) => r,
        Err(m) => return refused(&format!("{file}: {m}")),
    };
    let who = a.principal().who;
    let mut summary = Summary {
        file,
        errors: unreadable,
        ..Summary::default()
    };
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let chunk: Vec<ImportRow> = rows.by_ref().take(MAX_IMPORT).collect();
        let outcome = admin
            .app
            .links()
            .acting_as(&a.principal())
            .import(chunk, Some(&who))
            .await?;
        summary.imported += outcome.imported;
        summary.present += outcome.present;
        summary.errors.extend(outcome.errors);
    }
    summary.errors.sort_by_key(|e| e.line);
    tracing::info!(file = %summary.file, imported = summary.imported, present = summary.present,
        refused = summary.errors.len(), user = %a.user, "CSV import in the admin UI");
    Ok(page(&a, Some(&summary), None).into_response())
}

/// One page of the export after `after` (newest first), clicks included:
/// only team `team`'s links when given.
async fn export_page(
    admin: &AdminState,
    after: Option<u64>,
    team: Option<i64>,
) -> Result<Vec<Link>, AdminError> {
    let query = ListQuery {
        limit: EXPORT_PAGE,
        after: after.map(|id| (id as i64, id)),
        now: unix_now(),
        team,
        ..ListQuery::default()
    };
    Ok(admin.app.store.links_page(query).await?)
}

/// `rows` as CSV text.
fn csv_text(
    rows: impl IntoIterator<Item = [String; csv_format::HEADER.len()]>,
) -> Result<Vec<u8>, AdminError> {
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    for r in rows {
        w.write_record(&r)
            .map_err(|e| AdminError::Internal(e.to_string()))?;
    }
    w.into_inner()
        .map_err(|e| AdminError::Internal(e.to_string()))
}

/// Why an export stopped early.
enum ExportStop {
    /// The browser went away: nothing to report.
    Gone,
    /// Reading or writing failed.
    Failed(AdminError),
}

impl From<AdminError> for ExportStop {
    fn from(e: AdminError) -> Self {
        ExportStop::Failed(e)
    }
}

/// Writes the header and every link into `tx`; the number of links.
async fn write_export(
    admin: &AdminState,
    a: &Authed,
    tx: &mut Sender<Bytes, std::io::Error>,
) -> Result<usize, ExportStop> {
    let (base, team) = (&a.base, a.principal().team_filter());
    let head = csv_text([csv_format::HEADER.map(String::from)])?;
    tx.send_data(Bytes::from(head))
        .await
        .map_err(|_| ExportStop::Gone)?;
    let names: std::collections::HashMap<i64, String> = admin
        .app
        .store
        .list_teams()
        .await
        .map_err(AdminError::from)?
        .into_iter()
        .map(|t| (t.id, t.name))
        .collect();
    let (mut after, mut n) = (None, 0);
    loop {
        let links = export_page(admin, after, team).await?;
        let Some(last) = links.last() else {
            return Ok(n);
        };
        after = Some(last.id);
        n += links.len();
        let codec = &admin.app.codec;
        let text = csv_text(links.iter().map(|l| {
            let team = names.get(&l.team_id).map_or("", String::as_str);
            csv_format::record(&LinkView::new(codec, l, base), team)
        }))?;
        tx.send_data(Bytes::from(text))
            .await
            .map_err(|_| ExportStop::Gone)?;
    }
}

/// GET `/admin/csv/export.csv`: every link, newest first, a page at a
/// time into the response (a failure midway cuts the download short,
/// so the browser reports it failed).
pub async fn export_csv(State(admin): State<AdminState>, a: Authed) -> Response {
    let (mut tx, body) = Channel::<Bytes, std::io::Error>::new(4);
    tokio::spawn(async move {
        match write_export(&admin, &a, &mut tx).await {
            Ok(n) => tracing::info!(links = n, user = %a.user, "CSV export from the admin UI"),
            Err(ExportStop::Gone) => {}
            Err(ExportStop::Failed(e)) => {
                tracing::error!(error = ?e, user = %a.user, "CSV export from the admin UI failed");
                tx.abort(std::io::Error::other(
                    "the export failed: see the daemon's log",
                ));
            }
        }
    });
    let day = time::OffsetDateTime::now_utc().date();
    let name = format!(
        "shortlinks-{:04}{:02}{:02}.csv",
        day.year(),
        day.month() as u8,
        day.day()
    );
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
        ],
        Body::new(body),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreadable_rows_are_refused_by_line_and_the_rest_kept() {
        let file = "url,alias,redirect\nhttps://e.com/1,one,\n,empty,\nhttps://e.com/2,,30x\n";
        let (rows, bad) = read_rows(file.as_bytes()).unwrap();
        let lines: Vec<u64> = rows.iter().map(|r| r.0).collect();
        assert_eq!(lines, vec![2]);
        assert_eq!(rows[0].2.as_deref(), Some("one"));
        let bad: Vec<(u64, &str)> = bad.iter().map(|e| (e.line, e.message.as_str())).collect();
        assert_eq!(bad[0], (3, "url: the URL is empty"));
        assert_eq!(bad[1], (4, "redirect: \"30x\" is not a status like 301"));
        assert_eq!(bad.len(), 2, "{bad:?}");
        assert_eq!(
            read_rows(b"link\nhttps://e.com/\n").unwrap_err(),
            "the header names no known format: ours has a `url` column; Bitly's, Shlink's, YOURLS's and Kutt's exports are known by theirs"
        );
    }
}
