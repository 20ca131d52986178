-- `dedupe` finds links by the first 8 bytes of their hash and compares the
-- whole hash in the row (store/links.rs, `by_dedupe_hash`): an index of
-- 8-byte keys has under half the leaf pages of one of the 32-byte hashes,
-- so a bulk write (import, batch) dirties and writes fewer of them.
DROP INDEX links_dedupe;
CREATE INDEX links_dedupe8 ON links (substr(dedupe_hash, 1, 8))
    WHERE dedupe_hash IS NOT NULL;
