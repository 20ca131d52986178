-- Id recycling (ids/recycle, opt-in). Every id range leased from id_alloc
-- (or taken again from the recycled ones) with when: a range is recycled
-- only when it and every link in it are past the grace period. state:
-- 'leased' (handed to a daemon), 'purged' (its old links, clicks and
-- per-link rows deleted, the edges told; not yet reusable), 'available'
-- (reusable, lowest first). reuses: how many times it was taken again.
CREATE TABLE id_ranges (
    start        INTEGER PRIMARY KEY,
    stop         INTEGER NOT NULL,
    leased_at    INTEGER NOT NULL,
    state        TEXT NOT NULL DEFAULT 'leased',
    recycled_at  INTEGER,
    reuses       INTEGER NOT NULL DEFAULT 0,
    CHECK (start < stop)
);
CREATE INDEX id_ranges_available ON id_ranges (start) WHERE state = 'available';

-- When each deleted link was deleted (its row is gone): its id is
-- recycled only a grace period after. Dropped when its range is recycled.
CREATE TABLE link_tombstones (
    link_id     INTEGER PRIMARY KEY,
    deleted_at  INTEGER NOT NULL
);
