//! Why a link operation failed; `api::error` maps it to HTTP statuses, the
//! admin UI to messages next to the form fields. It belongs to the store
//! interface because an edit's own refusal travels through the store's
//! write (`Updated::Refused`).

use crate::store::StoreError;

/// Why a link operation failed.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// A request field is invalid.
    #[error("{message}")]
    Invalid {
        /// The field at fault, as the API names it (`url`, `targets.ios`).
        field: &'static str,
        /// Stable error code for clients (`invalid_url`, `alias_reserved`).
        code: &'static str,
        /// What is wrong, naming the field.
        message: String,
    },
    /// The alias belongs to another link.
    #[error("alias \"{0}\" is already taken")]
    AliasTaken(String),
    /// No link has this code or alias.
    #[error("no link has the code \"{0}\"")]
    NotFound(String),
    /// Too many items in one batch.
    #[error("a batch holds at most {max} links; this one has {got}")]
    BatchTooLarge { got: usize, max: usize },
    /// The link is covered by a takedown in force: switching it on is not
    /// the owner's to do, only an admin's undo of the takedown.
    #[error("the link is taken down; it cannot be switched on until an admin undoes the takedown")]
    TakenDown,
    /// A link password could not be hashed (not a bad password).
    #[error("link password hashing failed: {0}")]
    Hashing(String),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A refused field.
pub(crate) fn invalid(
    field: &'static str,
    code: &'static str,
    message: impl Into<String>,
) -> LinkError {
    LinkError::Invalid {
        field,
        code,
        message: message.into(),
    }
}
