//! What a credential may do: its role ([`Role`]: what a user, and every
//! key made for them, may do at most) and its scopes ([`Scope`]: what one
//! key or app is granted). Plain values, read by the store and judged by
//! [`crate::auth`].

mod role;
mod scope;

pub use role::{Role, RoleError};
pub use scope::{parse_scopes, scopes_from_stored, scopes_to_string, Scope, ScopeError};
