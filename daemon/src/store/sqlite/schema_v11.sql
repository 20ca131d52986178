-- A/B variants: a JSON array of {"url", "weight"} objects that replace the
-- link's url at the edge; NULL for none.
ALTER TABLE links ADD COLUMN variants TEXT;
