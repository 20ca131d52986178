-- Password-protected links: the argon2id hash of the password visitors
-- must give at the edge; NULL for none. Never sent to nginx or returned.
ALTER TABLE links ADD COLUMN password_hash TEXT;
