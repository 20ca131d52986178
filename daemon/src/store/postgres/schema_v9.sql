-- Clicks per A/B variant (as SQLite's schema_v16): per link, hour and
-- variant index (0-based, in the link's `variants` order), written only
-- for clicks the edge sent to a variant, in the batch's transaction.
CREATE TABLE variant_clicks (
    link_id  bigint NOT NULL REFERENCES links (id) ON DELETE CASCADE,
    hour     bigint NOT NULL,
    variant  smallint NOT NULL,
    count    bigint NOT NULL,
    PRIMARY KEY (link_id, hour, variant)
);
