-- The schema registry (docs/registry.md). search_path is set by the kit.

-- Every published contract of a service, numbered 1, 2, … per service. The contract is kept as
-- `json` (not jsonb) so its text, key order included, comes back exactly as composed.
CREATE TABLE versions (
  service     text NOT NULL,
  version     integer NOT NULL CHECK (version > 0),
  hash        text NOT NULL CHECK (hash ~ '^[0-9a-f]{64}$'),
  url         text NOT NULL,
  contract    json NOT NULL,
  author      text NOT NULL,
  created_at  timestamptz(3) NOT NULL DEFAULT now(),
  PRIMARY KEY (service, version)
);

-- Every composition of the services' current versions, numbered globally; gateways serve the
-- latest. `services` maps each service to the version composed.
CREATE TABLE compositions (
  composition integer PRIMARY KEY CHECK (composition > 0),
  hash        text NOT NULL,
  supergraph  text NOT NULL,
  routes      json NOT NULL,
  openapi     json NOT NULL,
  services    jsonb NOT NULL,
  author      text NOT NULL,
  created_at  timestamptz(3) NOT NULL DEFAULT now()
);

-- Breaking changes let through on purpose, with who did it and why.
CREATE TABLE acknowledgements (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  service     text NOT NULL,
  version     integer,
  type        text NOT NULL,
  path        text NOT NULL,
  message     text NOT NULL,
  reason      text NOT NULL,
  author      text NOT NULL,
  created_at  timestamptz(3) NOT NULL DEFAULT now()
);

-- Operations the gateways saw, counted per hour, operation and client; kept
-- REGISTRY_USAGE_RETENTION_DAYS. `coordinates` (Type, Type.field, Type.field.arg) is what
-- breaking changes are matched against.
CREATE TABLE usage_hourly (
  hour            timestamptz NOT NULL,
  operation_hash  text NOT NULL,
  client          text NOT NULL,
  operation_name  text NOT NULL,
  operation_body  text NOT NULL,
  coordinates     text[] NOT NULL,
  count           bigint NOT NULL CHECK (count >= 0),
  last_seen       timestamptz(3) NOT NULL DEFAULT now(),
  PRIMARY KEY (hour, operation_hash, client)
);
CREATE INDEX usage_hourly_coordinates_idx ON usage_hourly USING gin (coordinates);

-- The gateways that polled or reported, and the composition each said it serves.
CREATE TABLE gateways (
  id          text PRIMARY KEY,
  composition integer,
  last_seen   timestamptz(3) NOT NULL DEFAULT now()
);
