-- Clicks per A/B variant (issue #15): per link, hour and variant index
-- (0-based, in the link's `variants` order), written only for clicks the
-- edge sent to a variant, so links without variants pay nothing; the
-- `clicks` rows keep counting every click. `click_log` rows of format 3
-- carry a variant per row; rows of format 2 are read with none.
CREATE TABLE variant_clicks (
    link_id  INTEGER NOT NULL REFERENCES links(id) ON DELETE CASCADE,
    hour     INTEGER NOT NULL,
    variant  INTEGER NOT NULL,
    count    INTEGER NOT NULL,
    PRIMARY KEY (link_id, hour, variant)
) WITHOUT ROWID;
