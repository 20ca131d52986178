-- Visit leases of limited links (store/visits.rs), as SQLite's
-- schema_v22.sql: the visits of each link handed to the edges. A lease
-- locks its link's row here, not in `links`, so leases on several nodes
-- are served one after the other without touching the hot table.
CREATE TABLE visit_leases (
    link_id      bigint PRIMARY KEY,
    link_created bigint NOT NULL,
    leased       bigint NOT NULL
);
