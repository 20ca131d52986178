-- A takedown is a state of its own, as SQLite's schema_v23.sql: an edit
-- cannot lift `links.taken_down`, only the takedown's undo;
-- `takedowns.switch_off` tells switching takedowns from recording ones.
ALTER TABLE links ADD COLUMN taken_down boolean NOT NULL DEFAULT false;
ALTER TABLE takedowns ADD COLUMN switch_off boolean NOT NULL DEFAULT true;
UPDATE takedowns SET switch_off = false WHERE kind = 'blocklist' AND disabled = 0;
UPDATE links SET taken_down = true WHERE id IN (
    SELECT t.link_id FROM takedown_links t JOIN takedowns d ON d.id = t.takedown_id
    WHERE d.undone_at IS NULL AND d.switch_off);
UPDATE links SET disabled = false WHERE taken_down AND id IN (
    SELECT link_id FROM takedown_links WHERE changed);
