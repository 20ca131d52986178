-- The edge change log: one row per write that changes what the nginx
-- workers may hold for a link (its generated code and its aliases before
-- and after), appended in the write's own transaction. A worker that comes
-- back after an outage resumes from the last row it applied instead of
-- dropping its cache. Only the newest rows are kept (store/changes.rs).
CREATE TABLE edge_changes (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    link_id    INTEGER NOT NULL,
    old_alias  TEXT,
    new_alias  TEXT
);

-- Which database this is: a worker's position means nothing in another.
CREATE TABLE store_meta (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    store_id  INTEGER NOT NULL
);
INSERT INTO store_meta (id, store_id) VALUES (1, abs(random()));
