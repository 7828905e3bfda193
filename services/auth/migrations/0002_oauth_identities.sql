-- OAuth 2.0 / OIDC login (src/oauth/). Stands on its own: nothing here refers to 0001's tables.

-- One row per login in progress, keyed by the sha256 of its `state` (the state itself lives only in
-- the browser's cookie and the provider's redirect). The PKCE verifier and the nonce stay on the
-- server; a row is deleted on first use, so a callback cannot be replayed.
CREATE TABLE oauth_flows (
  state_hash    text PRIMARY KEY CHECK (state_hash ~ '^[0-9a-f]{64}$'),
  provider      text NOT NULL,
  code_verifier text NOT NULL,
  nonce         text NOT NULL,
  created_at    timestamptz(3) NOT NULL DEFAULT now(),
  expires_at    timestamptz(3) NOT NULL
);
-- Serves the sweep of abandoned flows.
CREATE INDEX oauth_flows_expires_at_idx ON oauth_flows (expires_at);

-- A provider account (issuer-scoped `sub`) linked to a local user. Users live in content's schema,
-- so user_id refers to them by id only (no cross-schema foreign key).
CREATE TABLE oauth_identities (
  provider   text NOT NULL,
  subject    text NOT NULL,
  user_id    bigint NOT NULL,
  -- The verified email the provider vouched for at the last login, lower-cased.
  email      text NOT NULL CHECK (email = lower(email)),
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  PRIMARY KEY (provider, subject)
);
CREATE INDEX oauth_identities_user_id_idx ON oauth_identities (user_id);
