-- When each API key (kind 'key', by prefix) and app (kind 'app', by app id)
-- was last used, for the admin UI's keys page; written at most once a
-- minute per credential. Before v3 the admin UI created this table on its
-- first write, so it may exist already.
CREATE TABLE IF NOT EXISTS credential_use (
    kind          TEXT NOT NULL,
    ident         TEXT NOT NULL,
    last_used_at  INTEGER NOT NULL,
    PRIMARY KEY (kind, ident)
) WITHOUT ROWID;
