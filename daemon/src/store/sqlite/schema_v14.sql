-- The link checker's results (checker/): per link, the last probe (when,
-- the status, why it failed or was skipped) and the failures in a row;
-- claimed_until keeps a link one node's while it probes it.
CREATE TABLE link_checks (
    link_id       INTEGER PRIMARY KEY,
    checked_at    INTEGER,
    status        INTEGER,
    error         TEXT,
    failures      INTEGER NOT NULL DEFAULT 0,
    claimed_until INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX link_checks_failing ON link_checks (failures) WHERE failures > 0;
-- Set while the target fails `checker.fallback_after` probes in a row:
-- the edge answers the link as gone (the fallback) until it recovers.
ALTER TABLE links ADD COLUMN broken INTEGER NOT NULL DEFAULT 0;
