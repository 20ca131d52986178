//! shortlinkd: the daemon that owns shortlink's data.
//!
//! It stores links in SQLite ([`store`]), hands out ids from leased
//! segments ([`ids`]), serves the HTTP API ([`api`]) and the IPC protocol
//! the nginx module speaks ([`ipc`]), counts clicks ([`stats`], [`spool`])
//! and carries the command line ([`cli`]) and the admin UI ([`admin`]).

pub mod admin;
pub mod api;
pub mod app;
pub mod cli;
pub mod codes;
pub mod config;
pub mod events;
pub mod ids;
pub mod ipc;
pub mod links;
pub mod metrics;
pub mod server;
pub mod spool;
pub mod stats;
pub mod store;
