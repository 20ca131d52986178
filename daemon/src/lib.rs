//! shortlinkd: the daemon that owns shortlink's data.
//!
//! It stores links in SQLite or PostgreSQL behind one interface
//! ([`store`]), judges and changes them ([`links`]), hands out ids from
//! leased segments ([`ids`]), tells the nginx workers what changed
//! ([`edge`], [`events`]), serves the HTTP API ([`api`]) and the IPC
//! protocol the nginx module speaks ([`ipc`]), counts clicks ([`stats`],
//! [`spool`]) and carries the command line ([`cli`]) and the admin UI
//! ([`admin`]). Callers are authenticated in [`auth`] and held to what
//! their role and scopes allow ([`access`]); API keys, apps and admin users
//! are managed in [`credentials`] and [`users`].

pub mod access;
pub mod admin;
pub mod api;
pub mod app;
pub mod app_secret;
pub mod auth;
pub mod base_url;
pub mod change_feed;
pub mod checker;
pub mod cli;
pub mod codes;
pub mod config;
pub mod credentials;
pub mod edge;
pub mod edge_deadline;
pub mod events;
pub mod ids;
pub mod ipc;
pub mod links;
pub mod metrics;
pub mod outage_log;
pub mod process_stats;
pub mod qr;
pub mod recycle;
pub mod server;
pub mod spool;
pub mod stats;
pub mod store;
pub mod takedown;
pub mod teams;
pub mod timestamp;
pub mod unread_body;
pub mod users;
pub mod webhooks;
