-- A link's title: a human name for it (what the target page is, or what
-- the campaign calls it), kept from the exports of Bitly, Shlink and
-- YOURLS and searched by the list's `q`. NULL: none.
ALTER TABLE links ADD COLUMN title TEXT;
