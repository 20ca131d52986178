-- Id ranges leased by running daemons and not yet used up. An import keeps
-- an exported code's id only when no live lease holds it, so it never takes
-- an id another node is about to hand out. holder: a random number per
-- daemon process (PgStore::open); name: the id_alloc row; stop: the lease's end, which trimming
-- (an import on the holder's own node) never moves.
CREATE TABLE id_leases (
    name       text NOT NULL,
    holder     bigint NOT NULL,
    start      bigint NOT NULL,
    stop       bigint NOT NULL,
    leased_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (name, holder, stop),
    CHECK (start < stop)
);
