//! What the health probe tells whom, and that it tells the truth when the
//! database cannot store writes (a full disk, a WAL deleted under the
//! daemon); the modes of the files the daemon makes and that app secrets
//! are not in them in clear.

#[path = "../common/mod.rs"]
mod common;

mod files;
mod health;
mod serve;
