-- Visit leases of limited links (store/visits.rs): the visits of each
-- link handed to the edges, which spend them one per person's redirect.
-- `link_created` is the link's `created_at` when the row was made: a
-- recycled id's new link starts from nothing.
CREATE TABLE visit_leases (
    link_id      INTEGER PRIMARY KEY,
    link_created INTEGER NOT NULL,
    leased       INTEGER NOT NULL
);
