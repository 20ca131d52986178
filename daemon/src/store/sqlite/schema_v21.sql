-- `links.check_mode`'s CHECK becomes a chain of equalities (same rule: NULL
-- or one of 'off', 'report', 'fallback'). SQLite codes a CHECK with
-- `IN (three or more constants)` as an ephemeral B-tree built and dropped
-- at every INSERT of a link: about 2 µs per row, a fifth of an import's
-- writer time. A CHECK cannot be altered in place; the table's stored SQL
-- is rewritten instead (SQLite's documented procedure for changing a
-- CHECK constraint that every row already satisfies), which the hook in
-- store/schema_hooks.rs does: no row is read or written.
SELECT 1;
