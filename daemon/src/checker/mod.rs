//! Dead and unsafe destinations: the background checker of link targets.
//! `probe.rs` makes one probe the way a visitor's browser meets the
//! target; `sweep.rs` finds the links due, claims them (one node probes
//! each) and records what the probes found.

pub mod probe;
pub mod sweep;
