//! The admin commands' one client of the HTTP API, typed with the API's own
//! request and reply types. It talks to the running daemon over its
//! owner-only control socket (so the daemon's cache and the nginx workers
//! stay right) or, when no daemon answers, runs the same router in this
//! process on the database.

use std::path::PathBuf;

use anyhow::{Context, Result};
use axum::body::{Body, Bytes};
use axum::http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::json;
use tower::ServiceExt;

use crate::api::error::ErrorBody;
use crate::api::import::ImportRequest;
use crate::api::keys::{AppList, CreatedApp, CreatedKey, KeyList, NewCredential};
use crate::api::links::{LinkPage, ListParams};
use crate::api::stats::StatsParams;
use crate::api::takedowns::{NewTakedownBody, TakedownList, TakedownView};
use crate::api::teams::{Membership, NewTeam, TeamList, TeamView};
use crate::api::users::{NewPassword, NewUser, UserList, UserView};
use crate::api::webhooks::{
    CreatedWebhook, DeliveryList, DeliveryView, NewWebhookBody, WebhookList,
};
use crate::app::{App, SharedApp};
use crate::config::Config;
use crate::links::{CreateLink, ImportOutcome, ImportRow, LinkView};
use crate::stats::StatsView;

/// An error reply of the API: its stable code and readable message.
#[derive(Debug, thiserror::Error)]
#[error("{message} ({code}, HTTP {status})")]
pub struct ReplyError {
    /// The HTTP status.
    pub status: u16,
    /// The API's stable error code (`error` when the body has none).
    pub code: String,
    /// The API's message, or the body as text.
    pub message: String,
}

impl ReplyError {
    /// Decodes a non-2xx reply.
    fn decode(status: StatusCode, body: &[u8]) -> Self {
        let (code, message) = match serde_json::from_slice::<ErrorBody>(body) {
            Ok(e) => (e.error.code, e.error.message),
            Err(_) => ("error".into(), String::from_utf8_lossy(body).into_owned()),
        };
        Self {
            status: status.as_u16(),
            code,
            message,
        }
    }
}

/// Where requests go; cheap to clone into a task.
#[derive(Clone)]
enum Transport {
    /// The running daemon's control socket.
    Daemon(PathBuf),
    /// No daemon: the API in this process, on the database directly.
    Direct(axum::Router),
}

impl Transport {
    /// Sends one request; a 2xx reply's body, or the reply's error.
    async fn send(self, method: Method, path: &str, json: Option<Vec<u8>>) -> Result<Bytes> {
        let builder = Request::builder()
            .method(method)
            .uri(path)
            .header("host", "localhost");
        let req = match json {
            Some(b) => builder
                .header("content-type", "application/json")
                .body(Body::from(b))?,
            None => builder.body(Body::empty())?,
        };
        let (status, bytes) = match self {
            Transport::Direct(router) => {
                let resp = router.oneshot(req).await?;
                (resp.status(), resp.into_body().collect().await?.to_bytes())
            }
            Transport::Daemon(path) => {
                let stream = tokio::net::UnixStream::connect(&path)
                    .await
                    .with_context(|| format!("connecting to {}", path.display()))?;
                let (mut sender, conn) =
                    hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                        .await?;
                tokio::spawn(conn);
                let resp = sender.send_request(req).await?;
                (resp.status(), resp.into_body().collect().await?.to_bytes())
            }
        };
        if !status.is_success() {
            return Err(ReplyError::decode(status, &bytes).into());
        }
        Ok(bytes)
    }

    /// Sends `body` as JSON (if any) and decodes the reply as `T`.
    async fn call<T: DeserializeOwned>(
        self,
        method: Method,
        path: &str,
        body: Option<&impl Serialize>,
    ) -> Result<T> {
        let json = body.map(serde_json::to_vec).transpose()?;
        let bytes = self.send(method, path, json).await?;
        serde_json::from_slice(&bytes).with_context(|| format!("reading the reply to {path}"))
    }
}

/// A path segment, percent-encoded.
fn enc(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// A query string.
fn query(params: &impl Serialize) -> Result<String> {
    Ok(serde_urlencoded::to_string(params)?)
}

/// What a request without a body sends.
const NO_BODY: Option<&()> = None;

/// The admin API, typed; one per command.
pub struct Client {
    transport: Transport,
    /// The state opened for [`Transport::Direct`], closed by [`Client::close`].
    direct: Option<SharedApp>,
}

impl Client {
    /// The running daemon if its control socket answers, else the database.
    pub async fn connect(config: &Config) -> Result<Self> {
        let path = config.control_path();
        if tokio::net::UnixStream::connect(&path).await.is_ok() {
            return Ok(Self {
                transport: Transport::Daemon(path),
                direct: None,
            });
        }
        let app = App::open(config.clone(), Some(16))
            .await
            .context("opening the database directly (no daemon is running)")?;
        Ok(Self {
            transport: Transport::Direct(crate::api::control_router(app.clone())),
            direct: Some(app),
        })
    }

    /// `GET path`, the reply decoded as `T` (for replies read in a shape
    /// of the caller's own, such as `export`'s).
    pub async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T> {
        self.transport
            .clone()
            .call(Method::GET, path, NO_BODY)
            .await
    }

    async fn post<T: DeserializeOwned>(&self, path: &str, body: &impl Serialize) -> Result<T> {
        self.transport
            .clone()
            .call(Method::POST, path, Some(body))
            .await
    }

    /// A request whose reply has no body.
    async fn send(&self, method: Method, path: &str, body: Option<&impl Serialize>) -> Result<()> {
        let json = body.map(serde_json::to_vec).transpose()?;
        self.transport.clone().send(method, path, json).await?;
        Ok(())
    }

    /// `POST /api/v1/keys`.
    pub async fn create_key(&self, req: &NewCredential) -> Result<CreatedKey> {
        self.post("/api/v1/keys", req).await
    }

    /// `GET /api/v1/keys`.
    pub async fn keys(&self) -> Result<KeyList> {
        self.get("/api/v1/keys").await
    }

    /// `DELETE /api/v1/keys/{id}`.
    pub async fn revoke_key(&self, id: i64) -> Result<()> {
        self.send(Method::DELETE, &format!("/api/v1/keys/{id}"), NO_BODY)
            .await
    }

    /// `POST /api/v1/apps`.
    pub async fn create_app(&self, req: &NewCredential) -> Result<CreatedApp> {
        self.post("/api/v1/apps", req).await
    }

    /// `GET /api/v1/apps`.
    pub async fn apps(&self) -> Result<AppList> {
        self.get("/api/v1/apps").await
    }

    /// `DELETE /api/v1/apps/{app_id}`.
    pub async fn revoke_app(&self, id: &str) -> Result<()> {
        let path = format!("/api/v1/apps/{}", enc(id));
        self.send(Method::DELETE, &path, NO_BODY).await
    }

    /// `POST /api/v1/users`.
    pub async fn add_user(&self, req: &NewUser) -> Result<UserView> {
        self.post("/api/v1/users", req).await
    }

    /// `GET /api/v1/users`.
    pub async fn users(&self) -> Result<UserList> {
        self.get("/api/v1/users").await
    }

    /// `DELETE /api/v1/users/{name}`.
    pub async fn delete_user(&self, name: &str) -> Result<()> {
        let path = format!("/api/v1/users/{}", enc(name));
        self.send(Method::DELETE, &path, NO_BODY).await
    }

    /// `PUT /api/v1/users/{name}/password`.
    pub async fn set_password(&self, name: &str, req: &NewPassword) -> Result<()> {
        let path = format!("/api/v1/users/{}/password", enc(name));
        self.send(Method::PUT, &path, Some(req)).await
    }

    /// `POST /api/v1/takedowns`.
    pub async fn take_down(&self, req: &NewTakedownBody) -> Result<TakedownView> {
        self.post("/api/v1/takedowns", req).await
    }

    /// `GET /api/v1/takedowns`.
    pub async fn takedowns(&self, limit: u32) -> Result<TakedownList> {
        self.get(&format!("/api/v1/takedowns?limit={limit}")).await
    }

    /// `GET /api/v1/ids`.
    pub async fn ids(&self, limit: u32) -> Result<crate::api::ids::IdsView> {
        self.get(&format!("/api/v1/ids?limit={limit}")).await
    }

    /// `POST /api/v1/takedowns/{id}/undo`.
    pub async fn undo_takedown(&self, id: i64) -> Result<TakedownView> {
        self.post(&format!("/api/v1/takedowns/{id}/undo"), &json!({}))
            .await
    }

    /// `PUT /api/v1/users/{name}/membership`.
    pub async fn set_membership(&self, name: &str, req: &Membership) -> Result<UserView> {
        let path = format!("/api/v1/users/{}/membership", enc(name));
        self.transport
            .clone()
            .call(Method::PUT, &path, Some(req))
            .await
    }

    /// `POST /api/v1/teams`.
    pub async fn create_team(&self, req: &NewTeam) -> Result<TeamView> {
        self.post("/api/v1/teams", req).await
    }

    /// `GET /api/v1/teams`.
    pub async fn teams(&self) -> Result<TeamList> {
        self.get("/api/v1/teams").await
    }

    /// `DELETE /api/v1/teams/{name}`.
    pub async fn delete_team(&self, name: &str) -> Result<()> {
        let path = format!("/api/v1/teams/{}", enc(name));
        self.send(Method::DELETE, &path, NO_BODY).await
    }

    /// `POST /api/v1/webhooks`.
    pub async fn create_webhook(&self, req: &NewWebhookBody) -> Result<CreatedWebhook> {
        self.post("/api/v1/webhooks", req).await
    }

    /// `GET /api/v1/webhooks`.
    pub async fn webhooks(&self) -> Result<WebhookList> {
        self.get("/api/v1/webhooks").await
    }

    /// `DELETE /api/v1/webhooks/{id}`.
    pub async fn delete_webhook(&self, id: i64) -> Result<()> {
        self.send(Method::DELETE, &format!("/api/v1/webhooks/{id}"), NO_BODY)
            .await
    }

    /// `GET /api/v1/webhooks/{id}/deliveries`.
    pub async fn webhook_deliveries(&self, id: i64, limit: u32) -> Result<DeliveryList> {
        self.get(&format!("/api/v1/webhooks/{id}/deliveries?limit={limit}"))
            .await
    }

    /// `POST /api/v1/webhooks/{id}/deliveries/{delivery}/redeliver`.
    pub async fn redeliver(&self, id: i64, delivery: i64) -> Result<DeliveryView> {
        let path = format!("/api/v1/webhooks/{id}/deliveries/{delivery}/redeliver");
        self.post(&path, &json!({})).await
    }

    /// `POST /api/v1/links`.
    pub async fn create_link(&self, req: &CreateLink) -> Result<LinkView> {
        self.post("/api/v1/links", req).await
    }

    /// `GET /api/v1/links/{code}`.
    pub async fn link(&self, code: &str) -> Result<LinkView> {
        self.get(&format!("/api/v1/links/{}", enc(code))).await
    }

    /// `GET /api/v1/links`.
    pub async fn links(&self, params: &ListParams) -> Result<LinkPage> {
        self.get(&format!("/api/v1/links?{}", query(params)?)).await
    }

    /// `PATCH /api/v1/links/{code}` with a body of the fields to change.
    pub async fn update_link(&self, code: &str, body: &serde_json::Value) -> Result<LinkView> {
        let path = format!("/api/v1/links/{}", enc(code));
        self.transport
            .clone()
            .call(Method::PATCH, &path, Some(body))
            .await
    }

    /// `DELETE /api/v1/links/{code}`.
    pub async fn delete_link(&self, code: &str) -> Result<()> {
        let path = format!("/api/v1/links/{}", enc(code));
        self.send(Method::DELETE, &path, NO_BODY).await
    }

    /// `GET /api/v1/links/{code}/stats`.
    pub async fn stats(&self, code: &str, params: &StatsParams) -> Result<StatsView> {
        let path = format!("/api/v1/links/{}/stats?{}", enc(code), query(params)?);
        self.get(&path).await
    }

    /// `GET /api/v1/stats`: every link's, or with a tag a campaign's.
    pub async fn site_stats(
        &self,
        params: &crate::api::stats::SiteStatsParams,
    ) -> Result<crate::stats::SiteStatsView> {
        self.get(&format!("/api/v1/stats?{}", query(params)?)).await
    }

    /// `POST /api/v1/import` of one chunk, as its own task (so the caller
    /// can read the next chunk meanwhile).
    pub fn import(&self, rows: Vec<ImportRow>) -> tokio::task::JoinHandle<Result<ImportOutcome>> {
        let transport = self.transport.clone();
        tokio::spawn(async move {
            let req = ImportRequest { rows };
            transport
                .call(Method::POST, "/api/v1/import", Some(&req))
                .await
        })
    }

    /// Closes the database when it was opened directly.
    pub async fn close(self) {
        drop(self.transport);
        if let Some(app) = self.direct {
            let store = app.store.clone();
            let _ = tokio::task::spawn_blocking(move || store.close()).await;
        }
    }
}
