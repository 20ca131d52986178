-- A takedown (an admin's, the blocklist's, the allow/block lists') is a
-- state of its own, `links.taken_down`, apart from the owner's `disabled`:
-- an edit cannot lift it, only the takedown's undo. `takedowns.switch_off`
-- tells a takedown that switches its links off from one that only records
-- them (the blocklist with `blocklist_disable` off).
ALTER TABLE links ADD COLUMN taken_down INTEGER NOT NULL DEFAULT 0;
ALTER TABLE takedowns ADD COLUMN switch_off INTEGER NOT NULL DEFAULT 1;
UPDATE takedowns SET switch_off = 0 WHERE kind = 'blocklist' AND disabled = 0;
-- Links an undone-free switching takedown covers are taken down; those a
-- takedown switched off (not their owner) are no longer `disabled`.
UPDATE links SET taken_down = 1 WHERE id IN (
    SELECT t.link_id FROM takedown_links t JOIN takedowns d ON d.id = t.takedown_id
    WHERE d.undone_at IS NULL AND d.switch_off = 1);
UPDATE links SET disabled = 0 WHERE taken_down = 1 AND id IN (
    SELECT link_id FROM takedown_links WHERE changed = 1);
