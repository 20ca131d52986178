-- API keys may expire: Unix seconds after which the key is refused
-- (`expired_api_key`); NULL never.
ALTER TABLE api_keys ADD COLUMN expires_at INTEGER;
