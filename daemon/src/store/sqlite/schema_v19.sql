-- Two folds of the pending clicks (store/clicks/fold.rs): every 2 s the
-- clicks of links with a visit limit or renew-on-access (found through
-- `links_fold_promptly`), less often everything else.
CREATE INDEX links_fold_promptly ON links (id)
    WHERE max_visits IS NOT NULL OR renew_ttl IS NOT NULL;
-- Bumped by every fold: a reader's snapshot tells by it whether the fold
-- it overlaps is in the tables yet.
ALTER TABLE click_fold ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
-- Links folded ahead of the whole log (by the prompt fold): their clicks in
-- `click_log` rows up to `through` are in the tables already, so recovery
-- skips them. Emptied by the fold of everything.
CREATE TABLE click_fold_links (
    link_id  INTEGER PRIMARY KEY,
    through  INTEGER NOT NULL
) WITHOUT ROWID;
