-- Click batches acknowledged but not yet folded into `clicks` and the
-- per-link totals in `links`: one row per batch, the batch as one IPC
-- frame. Appending a batch writes O(1) pages; a background fold applies
-- many rows at once and deletes them in the same transaction.
-- AUTOINCREMENT: a seq is never reused, even after the table was emptied.
CREATE TABLE click_log (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    received_at  INTEGER NOT NULL,
    batch        BLOB NOT NULL
);

-- The highest click_log seq whose clicks are in `clicks` and `links`.
CREATE TABLE click_fold (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    folded_through  INTEGER NOT NULL
);
INSERT INTO click_fold (id, folded_through) VALUES (1, 0);
