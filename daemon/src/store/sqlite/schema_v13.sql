-- Teams and roles (auth/role.rs). Every link belongs to a team; users
-- belong to a team with a role; API keys belong to a user (or, for keys
-- made before teams, stand alone with a team and role of their own).
-- Existing data moves into the default team (id 1).
CREATE TABLE teams (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL
);
INSERT INTO teams (id, name, created_at) VALUES (1, 'default', CAST(strftime('%s', 'now') AS INTEGER));

-- No foreign key on links: SQLite cannot add one with a non-NULL default;
-- a team is deleted only when no link, user, key or app is left in it.
ALTER TABLE links ADD COLUMN team_id INTEGER NOT NULL DEFAULT 1;
CREATE INDEX links_team ON links (team_id, id);

-- Users had every power of the admin UI: they become admins.
ALTER TABLE users ADD COLUMN team_id INTEGER NOT NULL DEFAULT 1;
ALTER TABLE users ADD COLUMN role TEXT NOT NULL DEFAULT 'admin';

-- A key made for a user takes the user's team and role at every check;
-- a key of its own (user_id NULL) has the role its scopes give it.
ALTER TABLE api_keys ADD COLUMN user_id INTEGER;
ALTER TABLE api_keys ADD COLUMN team_id INTEGER NOT NULL DEFAULT 1;
ALTER TABLE api_keys ADD COLUMN role TEXT NOT NULL DEFAULT 'viewer';
UPDATE api_keys SET role = CASE
    WHEN instr(',' || scopes || ',', ',admin,') > 0 THEN 'admin'
    WHEN instr(',' || scopes || ',', ',links:write,') > 0 THEN 'member'
    ELSE 'viewer' END;
CREATE INDEX api_keys_user ON api_keys (user_id);

ALTER TABLE apps ADD COLUMN team_id INTEGER NOT NULL DEFAULT 1;
ALTER TABLE apps ADD COLUMN role TEXT NOT NULL DEFAULT 'viewer';
UPDATE apps SET role = CASE
    WHEN instr(',' || scopes || ',', ',admin,') > 0 THEN 'admin'
    WHEN instr(',' || scopes || ',', ',links:write,') > 0 THEN 'member'
    ELSE 'viewer' END;
