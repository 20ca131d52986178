-- Takedowns: every link to a host, or made by one principal, switched off
-- in one write (kind 'host' or 'creator'), or the links the allow/block
-- lists refuse once they change (kind 'config'); who, when and why, and
-- the undo.
CREATE TABLE takedowns (
    id          INTEGER PRIMARY KEY,
    kind        TEXT NOT NULL,
    selector    TEXT NOT NULL,
    reason      TEXT NOT NULL,
    created_by  TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    matched     INTEGER NOT NULL DEFAULT 0,
    disabled    INTEGER NOT NULL DEFAULT 0,
    undone_at   INTEGER,
    undone_by   TEXT,
    restored    INTEGER
);
-- Every link a takedown matched; changed = 1 for those it switched off.
CREATE TABLE takedown_links (
    takedown_id INTEGER NOT NULL REFERENCES takedowns(id) ON DELETE CASCADE,
    link_id     INTEGER NOT NULL,
    changed     INTEGER NOT NULL,
    PRIMARY KEY (takedown_id, link_id)
) WITHOUT ROWID;
CREATE INDEX takedown_links_by_link ON takedown_links (link_id);
CREATE INDEX links_by_creator ON links (created_by) WHERE created_by IS NOT NULL;
