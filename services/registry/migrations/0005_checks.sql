-- Every check, publish and rollback that reached a check (docs/registry.md, "Checks"), so a team
-- (and the Studio) can read back what was refused and why, not only what was published. A request
-- refused before its check (400, 401, 403) is not one. `report` is the check report as it was
-- answered: changes with their usage, notes, composition and REST errors, options. `version` is
-- the version a publish or rollback made (unchanged: the one that stayed current). Kept
-- REGISTRY_USAGE_RETENTION_DAYS, pruned with usage.
CREATE TABLE checks (
  id              bigserial PRIMARY KEY,
  service         text NOT NULL,
  kind            text NOT NULL CHECK (kind IN ('check', 'publish', 'rollback')),
  author          text NOT NULL,
  ok              boolean NOT NULL,
  outcome         text NOT NULL CHECK (outcome IN ('passed', 'published', 'unchanged', 'refused')),
  report          jsonb NOT NULL,
  acknowledgement text,
  version         integer,
  created_at      timestamptz(3) NOT NULL DEFAULT now()
);
-- Newest first, of one service or of all; `id` orders checks recorded in the same millisecond.
CREATE INDEX checks_service_created_at ON checks (service, created_at DESC, id DESC);
CREATE INDEX checks_created_at ON checks (created_at DESC, id DESC);
