-- Clicks per visitor country (`shortlink_country` at the edge): the
-- country joins the key of every `clicks` row; rows from before it count
-- as the unknown country '--'. SQLite cannot change a primary key, so the
-- table is copied.
CREATE TABLE clicks_v9 (
    link_id   INTEGER NOT NULL REFERENCES links(id) ON DELETE CASCADE,
    hour      INTEGER NOT NULL,
    device    INTEGER NOT NULL,
    bot       INTEGER NOT NULL,
    referrer  TEXT NOT NULL,
    country   TEXT NOT NULL DEFAULT '--',
    count     INTEGER NOT NULL,
    PRIMARY KEY (link_id, hour, device, bot, referrer, country)
) WITHOUT ROWID;
INSERT INTO clicks_v9 (link_id, hour, device, bot, referrer, country, count)
    SELECT link_id, hour, device, bot, referrer, '--', count FROM clicks;
DROP TABLE clicks;
ALTER TABLE clicks_v9 RENAME TO clicks;
CREATE INDEX clicks_by_hour ON clicks (hour);
-- The frame format of each unfolded batch: 1 (before countries) is read
-- with the unknown country, 2 carries a country per row.
ALTER TABLE click_log ADD COLUMN format INTEGER NOT NULL DEFAULT 1;
-- Targets per visitor country: a JSON object of ISO 3166-1 alpha-2 code to
-- URL; NULL for none.
ALTER TABLE links ADD COLUMN country_targets TEXT;
