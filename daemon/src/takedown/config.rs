//! The allow/block lists of `[targets]` apply to links already stored:
//! when they change, the links they now refuse are switched off at
//! start-up, as one takedown of kind `config` (reported in the log and in
//! the takedown list, undone like any other). The record's selector is
//! the lists in normal form, so a daemon started again with the same lists
//! (or another node with them) finds them applied and does nothing.

use std::sync::Arc;

use shortlink_core::NormalHost;

use crate::app::App;
use crate::store::{Matcher, NewTakedown, StoreResult};
use crate::timestamp::unix_now;

/// Who config takedowns are recorded as.
pub const BY: &str = "config";

/// The lists as the record names them: each entry in normal form, sorted.
fn selector(allow: &[String], block: &[String]) -> String {
    let normal = |list: &[String]| {
        let mut v: Vec<String> = list
            .iter()
            .map(|e| NormalHost::parse(e).map_or_else(|_| e.clone(), |h| h.name))
            .collect();
        v.sort();
        v.dedup();
        v.join(",")
    };
    format!(
        "allow_hosts=[{}] block_hosts=[{}]",
        normal(allow),
        normal(block)
    )
}

/// Switches off the stored links the configured lists refuse, unless these
/// lists were applied already; returns how many were switched off.
pub async fn apply_target_rules(app: &App) -> StoreResult<u64> {
    let targets = &app.config.targets;
    let policy = targets.policy().clone();
    let empty = targets.allow_hosts.is_empty() && targets.block_hosts.is_empty();
    let done = app
        .store
        .take_down(NewTakedown {
            kind: "config",
            selector: selector(&targets.allow_hosts, &targets.block_hosts),
            reason: "the allow/block lists of [targets] changed".into(),
            by: BY.into(),
            at: unix_now(),
            matcher: Matcher::Urls {
                contains: None,
                test: Arc::new(move |url: &str| policy.refuses_host(url)),
            },
            switch_off: true,
            once: true,
            unless_first: empty,
        })
        .await?;
    let Some(done) = done else {
        return Ok(0);
    };
    super::tell_edge(app, &done.changed).await;
    let t = &done.record;
    // A warning only when stored links were switched off: new lists that
    // refuse nothing stored (a fresh install) are just noted.
    if t.disabled > 0 {
        tracing::warn!(
            takedown = t.id, selector = %t.selector, disabled = t.disabled,
            "the allow/block lists changed: links they refuse were switched off \
             (undo with shortlinkd takedown undo {})", t.id
        );
    } else {
        tracing::info!(
            takedown = t.id, selector = %t.selector,
            "the allow/block lists changed: no stored link is refused by them"
        );
    }
    Ok(t.disabled)
}

#[cfg(test)]
mod tests {
    use super::selector;

    #[test]
    fn the_selector_is_the_lists_in_normal_form() {
        let a = selector(&["B.example".into(), "a.example.".into()], &[]);
        let b = selector(&["a.example".into(), "*.b.example".into()], &[]);
        assert_eq!(a, b);
        assert_eq!(a, "allow_hosts=[a.example,b.example] block_hosts=[]");
        assert_ne!(a, selector(&[], &["a.example".into(), "b.example".into()]));
    }
}
