-- Publish and rollback tokens are single-use (docs/registry.md, "Authentication"): a service token
-- (or npm start's developer token) spent on a write is remembered here until it expires, so the
-- same token sent again, by a retry or by whoever copied it, is refused. Rows past their expiry
-- are deleted as new tokens are spent.
CREATE TABLE spent_tokens (
  jti text PRIMARY KEY,
  expires_at timestamptz NOT NULL
);
CREATE INDEX spent_tokens_expires_at ON spent_tokens (expires_at);
