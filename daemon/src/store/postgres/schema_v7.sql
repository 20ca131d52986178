-- The link checker's results (as SQLite's schema_v14): per link, the last
-- probe and the failures in a row; claimed_until keeps a link one node's
-- while it probes it.
CREATE TABLE link_checks (
    link_id       bigint PRIMARY KEY,
    checked_at    bigint,
    status        integer,
    error         text,
    failures      integer NOT NULL DEFAULT 0,
    claimed_until bigint NOT NULL DEFAULT 0
);
CREATE INDEX link_checks_failing ON link_checks (failures) WHERE failures > 0;
-- Set while the target fails `checker.fallback_after` probes in a row:
-- the edge answers the link as gone (the fallback) until it recovers.
ALTER TABLE links ADD COLUMN broken boolean NOT NULL DEFAULT false;
