-- The auth service's schema (search_path is set by the kit). Users live in content's schema;
-- user_id / owner_id refer to them by id only (no cross-schema foreign keys).
-- Timestamps keep millisecond precision, like content's, so they round-trip exactly through JSON.

-- One password per user; a user who only ever signed in through OAuth has no row here.
CREATE TABLE credentials (
  user_id       bigint PRIMARY KEY,
  password_hash text NOT NULL,
  created_at    timestamptz(3) NOT NULL DEFAULT now(),
  updated_at    timestamptz(3) NOT NULL DEFAULT now()
);

-- Refresh tokens, stored as the sha256 of the token (never the token). A login starts a family;
-- each refresh marks its token rotated and adds the next one to the same family, so presenting a
-- rotated token again is detectable (reuse) and revokes the family.
CREATE TABLE refresh_tokens (
  id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  token_hash text NOT NULL UNIQUE CHECK (token_hash ~ '^[0-9a-f]{64}$'),
  family_id  uuid NOT NULL,
  user_id    bigint NOT NULL,
  -- The family's absolute expiry: every token of a family carries the same value.
  expires_at timestamptz(3) NOT NULL,
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  rotated_at timestamptz(3),
  revoked_at timestamptz(3)
);
CREATE INDEX refresh_tokens_family_id_idx ON refresh_tokens (family_id);
-- Serves the periodic purge of expired families.
CREATE INDEX refresh_tokens_expires_at_idx ON refresh_tokens (expires_at);

-- API keys, stored as the sha256 of the key; `prefix` (`halo_xxxxxxxx`) is kept to show in lists.
CREATE TABLE api_keys (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  owner_id     bigint NOT NULL,
  name         text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
  prefix       text NOT NULL,
  key_hash     text NOT NULL UNIQUE CHECK (key_hash ~ '^[0-9a-f]{64}$'),
  scopes       text[] NOT NULL,
  created_at   timestamptz(3) NOT NULL DEFAULT now(),
  last_used_at timestamptz(3),
  revoked_at   timestamptz(3)
);
CREATE INDEX api_keys_owner_id_idx ON api_keys (owner_id, id);
