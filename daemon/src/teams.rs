//! Teams: create, list, delete, and finding one by name. Users belong to a
//! team; the links they (and their keys) create belong to it too; only
//! admins manage teams. The API, the admin UI and the CLI all go through
//! here.

use crate::access::Scope;
use crate::app::App;
use crate::auth::{AuthError, Principal};
use crate::store::{StoreError, Team};
use crate::timestamp::unix_now;

/// Longest team name, in bytes.
const MAX_NAME: usize = 64;

/// Why a team could not be made, found or deleted.
#[derive(Debug, thiserror::Error)]
pub enum TeamError {
    /// The name has characters or a length not allowed.
    #[error("team names are 1 to 64 of A-Z a-z 0-9 . _ -")]
    InvalidName,
    /// No team has this name.
    #[error("no team \"{0}\"")]
    Unknown(String),
    /// The caller may not manage teams.
    #[error(transparent)]
    Denied(#[from] AuthError),
    /// The store failed, the name is taken or the team is still in use.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn check_name(name: &str) -> Result<(), TeamError> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c);
    if name.is_empty() || name.len() > MAX_NAME || !name.chars().all(allowed) {
        return Err(TeamError::InvalidName);
    }
    Ok(())
}

/// Adds a team named `name` (trimmed).
pub async fn create(app: &App, by: &Principal, name: &str) -> Result<Team, TeamError> {
    by.require(Scope::Admin)?;
    let name = name.trim();
    check_name(name)?;
    let team = app.store.add_team(name.to_string(), unix_now()).await?;
    tracing::info!(team = %team.name, id = team.id, by = %by.who, "team added");
    Ok(team)
}

/// The teams `by` may see: every team for an admin, else their own.
pub async fn list(app: &App, by: &Principal) -> Result<Vec<Team>, TeamError> {
    by.require(Scope::LinksRead)?;
    let mut teams = app.store.list_teams().await?;
    teams.retain(|t| by.sees_team(t.id));
    Ok(teams)
}

/// The team named `name`.
pub async fn find(app: &App, name: &str) -> Result<Team, TeamError> {
    app.store
        .team_by_name(name.trim().to_string())
        .await?
        .ok_or_else(|| TeamError::Unknown(name.trim().to_string()))
}

/// Deletes the team named `name`; refused while anything is left in it.
pub async fn delete(app: &App, by: &Principal, name: &str) -> Result<(), TeamError> {
    by.require(Scope::Admin)?;
    let team = find(app, name).await?;
    app.store.delete_team(team.id).await?;
    tracing::info!(team = %team.name, by = %by.who, "team deleted");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn team_names_are_checked() {
        for good in ["default", "a.b_c-d", &"x".repeat(MAX_NAME)] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "sales team", "équipe", &"x".repeat(MAX_NAME + 1)] {
            assert!(
                matches!(check_name(bad), Err(TeamError::InvalidName)),
                "{bad}"
            );
        }
    }
}
