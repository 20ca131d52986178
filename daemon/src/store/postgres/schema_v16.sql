-- A link's title, as SQLite's schema_v24.sql: a human name for it, kept
-- from other shorteners' exports and searched by the list's `q`.
ALTER TABLE links ADD COLUMN title text;
