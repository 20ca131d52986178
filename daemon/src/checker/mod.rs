//! Dead and unsafe destinations: the background checker of link targets.
//! `probe.rs` makes one probe the way a visitor's browser meets the
//! target.

pub mod probe;

#[cfg(test)]
mod probe_tests;
