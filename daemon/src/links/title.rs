//! A link's title: a human name (the page's title, the campaign's name)
//! that lists show and `q` searches, kept from the exports of other
//! shorteners. One rule for creates, edits, imports and the admin form.

use crate::store::links::invalid;
use crate::store::LinkError;

/// Longest title, in characters (Bitly's and Shlink's titles fit).
pub const MAX_TITLE_LEN: usize = 512;

/// `title` trimmed: `None` when empty, refused when longer than
/// [`MAX_TITLE_LEN`] characters or holding a control character.
pub fn check_title(title: Option<&str>) -> Result<Option<String>, LinkError> {
    let Some(t) = title.map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    let len = t.chars().count();
    if len > MAX_TITLE_LEN {
        return Err(invalid(
            "title",
            "invalid_title",
            format!("title must be at most {MAX_TITLE_LEN} characters; got {len}"),
        ));
    }
    if t.chars().any(char::is_control) {
        return Err(invalid(
            "title",
            "invalid_title",
            format!("title {t:?} contains a control character"),
        ));
    }
    Ok(Some(t.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_trimmed_bounded_and_printable() {
        assert_eq!(check_title(None).unwrap(), None);
        assert_eq!(check_title(Some("  ")).unwrap(), None);
        assert_eq!(
            check_title(Some(" Spring sale ")).unwrap().as_deref(),
            Some("Spring sale")
        );
        let long = "é".repeat(MAX_TITLE_LEN + 1);
        let err = check_title(Some(&long)).unwrap_err().to_string();
        assert!(err.contains("at most 512"), "{err}");
        let err = check_title(Some("a\nb")).unwrap_err().to_string();
        assert!(err.contains("control character"), "{err}");
        assert!(check_title(Some(&"é".repeat(MAX_TITLE_LEN))).is_ok());
    }
}
