-- Links. The generated code is never stored: it is the codec's encoding of id.
CREATE TABLE links (
    id              INTEGER PRIMARY KEY,
    alias           TEXT UNIQUE,
    url             TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    expires_at      INTEGER,
    renew_ttl       INTEGER,
    max_visits      INTEGER,
    redirect        INTEGER,
    target_desktop  TEXT,
    target_mobile   TEXT,
    target_ios      TEXT,
    target_android  TEXT,
    disabled        INTEGER NOT NULL DEFAULT 0,
    tags            TEXT NOT NULL DEFAULT '[]',
    created_by      TEXT,
    dedupe_hash     BLOB,
    clicks          INTEGER NOT NULL DEFAULT 0,
    bot_clicks      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX links_dedupe ON links(dedupe_hash) WHERE dedupe_hash IS NOT NULL;

-- Click counts per link, hour and visitor kind; referrer '' means none.
CREATE TABLE clicks (
    link_id   INTEGER NOT NULL REFERENCES links(id) ON DELETE CASCADE,
    hour      INTEGER NOT NULL,
    device    INTEGER NOT NULL,
    bot       INTEGER NOT NULL,
    referrer  TEXT NOT NULL,
    count     INTEGER NOT NULL,
    PRIMARY KEY (link_id, hour, device, bot, referrer)
) WITHOUT ROWID;

-- Click batch ids already counted, so a re-sent batch counts once.
CREATE TABLE click_batches (
    batch_id  BLOB PRIMARY KEY,
    seen_at   INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX click_batches_seen ON click_batches(seen_at);

-- Id allocator: the next id not yet leased to any process.
CREATE TABLE id_alloc (
    name  TEXT PRIMARY KEY,
    next  INTEGER NOT NULL
);

-- API keys: only a hash of the secret is kept.
CREATE TABLE api_keys (
    id            INTEGER PRIMARY KEY,
    name          TEXT NOT NULL,
    prefix        TEXT NOT NULL UNIQUE,
    hash          BLOB NOT NULL,
    scopes        TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    revoked_at    INTEGER
);

-- Apps that sign requests with a shared secret (HMAC needs the secret itself).
CREATE TABLE apps (
    id          INTEGER PRIMARY KEY,
    app_id      TEXT NOT NULL UNIQUE,
    name        TEXT NOT NULL,
    secret      TEXT NOT NULL,
    scopes      TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER
);

-- Signatures already used, refused again while their timestamp is valid.
CREATE TABLE seen_signatures (
    signature  TEXT PRIMARY KEY,
    ts         INTEGER NOT NULL
) WITHOUT ROWID;

-- Admin UI users.
CREATE TABLE users (
    id             INTEGER PRIMARY KEY,
    name           TEXT NOT NULL UNIQUE,
    password_hash  TEXT NOT NULL,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
);
