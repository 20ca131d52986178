-- Webhooks (webhooks/): per team, a receiver URL, its signing secret
-- (sealed with the deployment key) and the events it subscribes to, as a
-- comma-separated list.
CREATE TABLE webhooks (
    id          INTEGER PRIMARY KEY,
    team_id     INTEGER NOT NULL REFERENCES teams (id),
    url         TEXT NOT NULL,
    secret      TEXT NOT NULL,
    events      TEXT NOT NULL,
    active      INTEGER NOT NULL DEFAULT 1,
    created_at  INTEGER NOT NULL,
    created_by  TEXT
);
CREATE INDEX webhooks_team ON webhooks (team_id);
-- The outbox: one row per delivery, written in the transaction of the
-- change it reports; claimed_until keeps a row one sender's while it
-- sends it.
CREATE TABLE webhook_deliveries (
    id              INTEGER PRIMARY KEY,
    webhook_id      INTEGER NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event           TEXT NOT NULL,
    link_id         INTEGER,
    payload         TEXT NOT NULL,
    status          TEXT NOT NULL DEFAULT 'pending',
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    claimed_until   INTEGER NOT NULL DEFAULT 0,
    last_status     INTEGER,
    last_error      TEXT,
    created_at      INTEGER NOT NULL,
    delivered_at    INTEGER,
    redelivery_of   INTEGER
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)
    WHERE status = 'pending';
CREATE INDEX webhook_deliveries_of ON webhook_deliveries (webhook_id, id);
-- Per link, the click totals the last click summary reported.
CREATE TABLE webhook_click_marks (
    link_id     INTEGER PRIMARY KEY,
    clicks      INTEGER NOT NULL,
    bot_clicks  INTEGER NOT NULL
);
-- How far the time-driven events were looked for: `expired` (links whose
-- expiry passed up to `at`) and `clicks` (the last click summary).
CREATE TABLE webhook_sweeps (
    name  TEXT PRIMARY KEY,
    at    INTEGER NOT NULL
);
INSERT INTO webhook_sweeps (name, at) VALUES
    ('expired', CAST(strftime('%s', 'now') AS INTEGER)),
    ('clicks', CAST(strftime('%s', 'now') AS INTEGER));
