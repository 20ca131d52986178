-- A link's own choice about the link checker (shortlink_core::check_mode):
-- 'off' (never probed), 'report' (never sent to the fallback), 'fallback';
-- NULL: the site's [checker] settings decide.
ALTER TABLE links ADD COLUMN check_mode TEXT
    CHECK (check_mode IN ('off', 'report', 'fallback'));
