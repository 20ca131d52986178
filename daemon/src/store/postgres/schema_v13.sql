-- A click batch in `click_log` (pg/click_log.rs) is a postcard frame of
-- ids, hours and counts that hardly compresses, yet PostgreSQL tried: a
-- batch over 2 kB went through pglz before being moved out of line, about
-- 2 % of the server's CPU under a steady click stream (bench/profiles/
-- hot-pg.txt). EXTERNAL keeps large batches out of line, uncompressed.
-- Rows written before keep their form; both read the same.
ALTER TABLE click_log ALTER COLUMN batch SET STORAGE EXTERNAL;
