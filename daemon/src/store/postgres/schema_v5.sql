-- Takedowns (as SQLite's schema_v12): every link to a host, or made by one
-- principal, switched off in one write, or the links the allow/block lists
-- refuse once they change; who, when and why, and the undo.
CREATE TABLE takedowns (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind        text NOT NULL,
    selector    text NOT NULL,
    reason      text NOT NULL,
    created_by  text NOT NULL,
    created_at  bigint NOT NULL,
    matched     bigint NOT NULL DEFAULT 0,
    disabled    bigint NOT NULL DEFAULT 0,
    undone_at   bigint,
    undone_by   text,
    restored    bigint
);
-- Every link a takedown matched; changed for those it switched off.
CREATE TABLE takedown_links (
    takedown_id bigint NOT NULL REFERENCES takedowns (id) ON DELETE CASCADE,
    link_id     bigint NOT NULL,
    changed     boolean NOT NULL,
    PRIMARY KEY (takedown_id, link_id)
);
CREATE INDEX takedown_links_by_link ON takedown_links (link_id);
CREATE INDEX links_by_creator ON links (created_by) WHERE created_by IS NOT NULL;
