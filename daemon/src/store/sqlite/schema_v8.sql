-- A link may choose whether the visit's query string joins its target:
-- NULL leaves it to the location's `shortlink_forward_query`, 1 or 0 wins
-- over it.
ALTER TABLE links ADD COLUMN forward_query INTEGER;
