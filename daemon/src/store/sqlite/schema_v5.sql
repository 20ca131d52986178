-- App secrets sealed with a subkey of the deployment key (ChaCha20-Poly1305,
-- auth/app_secret.rs): a copy of the database alone no longer hands them
-- out. seal_app_secret is the store's own SQL function (store/keys.rs).
-- secure_delete zeroes the space the clear values leave behind, so they do
-- not linger in free space of the pages rewritten here.
PRAGMA secure_delete = ON;
UPDATE apps SET secret = seal_app_secret(app_id, secret)
    WHERE secret NOT LIKE 'sealed1:%';
PRAGMA secure_delete = OFF;
