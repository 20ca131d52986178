-- Id recycling (opt-in), as SQLite's v17: every id range leased (or taken
-- again from the recycled ones) with when and its state ('leased',
-- 'purged', 'available'); a node claims an available range with a row
-- lock (FOR UPDATE SKIP LOCKED), so two nodes never get the same one.
CREATE TABLE id_ranges (
    start        bigint PRIMARY KEY,
    stop         bigint NOT NULL,
    leased_at    bigint NOT NULL,
    state        text NOT NULL DEFAULT 'leased',
    recycled_at  bigint,
    reuses       integer NOT NULL DEFAULT 0,
    CHECK (start < stop)
);
CREATE INDEX id_ranges_available ON id_ranges (start) WHERE state = 'available';

-- When each deleted link was deleted: its id is recycled only a grace
-- period after.
CREATE TABLE link_tombstones (
    link_id     bigint PRIMARY KEY,
    deleted_at  bigint NOT NULL
);
