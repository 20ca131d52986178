//! Logic shared by the nginx module and `shortlinkd`: the short-code codec,
//! alias and target-URL rules, device classification and the IPC wire format.
//!
//! Nothing here does I/O beyond reading a key file, and the request-path
//! functions (`Codec::decode`, `device::classify`) never allocate.

pub mod alias;
pub mod blocklist;
pub mod check_mode;
pub mod choice;
pub mod click_formats;
pub mod click_row;
pub mod clicks;
pub mod codec;
pub mod country;
pub mod device;
pub mod edge_cookie;
pub mod edge_status;
pub mod entry;
pub mod failure_run;
pub mod handshake;
pub mod ipc;
pub mod key;
pub mod password_page;
pub mod preview;
pub mod query;
pub mod recency;
pub mod reconnect;
pub mod redirect;
pub mod spool;
pub mod target;
pub mod variants;
pub mod visit_slots;
pub mod zone_hash;

pub use alias::{validate_alias, AliasError};
pub use codec::{Code, CodeError, Codec, MAX_CODE_LEN, MIN_CODE_LEN};
pub use key::{DeploymentKey, Fingerprint, KeyError};
pub use redirect::{NotARedirect, RedirectStatus};
pub use target::{
    validate_target, CheckedTarget, HostSet, NormalHost, TargetError, TargetPolicy, TargetRules,
};
