-- A password, passkey, phone or provider login set in a browser whose sign-in descends from another client (say, an agent's API key
-- that read the browser's sign-in code) is tied to that browser's client: revoking the client, or any client it
-- descends from, ends the factor (server/auth/credentials.ts revokeClient), and a sign-in with the factor is obtained
-- through it. NULL: set where the person proved the handle by themselves (sign-up, a password, passkey or phone not
-- tied to a client, the provider, an operator's reset link).
ALTER TABLE passwords ADD COLUMN set_through_client_id TEXT;
ALTER TABLE passkeys ADD COLUMN set_through_client_id TEXT;
ALTER TABLE agents ADD COLUMN phone_set_through_client_id TEXT;
ALTER TABLE oidc_identities ADD COLUMN set_through_client_id TEXT;
