-- Clicks folded later (pg/click_log.rs): a batch's clicks for links without
-- a visit limit or renew-on-access are appended whole to `click_log`, in
-- the transaction that claims its id, and any node's fold adds them to the
-- tables and deletes the row in one transaction. Clicks for limited or
-- renewed links are still counted in the batch's transaction.
CREATE TABLE click_log (
    seq          bigserial PRIMARY KEY,
    received_at  bigint NOT NULL,
    batch        bytea NOT NULL,
    format       smallint NOT NULL
);
CREATE INDEX links_fold_promptly ON links (id)
    WHERE max_visits IS NOT NULL OR renew_ttl IS NOT NULL;
