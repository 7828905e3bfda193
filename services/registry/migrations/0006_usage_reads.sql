-- Reading usage fast enough for the Studio (docs/registry.md, "Registry HTTP API";
-- docs/benchmarks.md, "Studio data endpoints"). A month of hourly rows is wide (each row holds its
-- operation's body and coordinate list, ~2 KiB), and grouping or unnesting tens of thousands of
-- coordinate lists costs seconds. But an operation's list barely changes (only with the enum values
-- its variables name), so:
--
-- * `coordinates_hash` names a row's list (md5 of its text; lists never differ but in content), kept
--   by Postgres itself as a generated column, whatever writes the row (a registry from before this
--   migration included). Readers sum rows per list and unnest each distinct list once.
-- * `usage_hourly_window` holds, in hour order, everything the read endpoints aggregate but the
--   wide columns, so they read the window by index only (7 MiB for 70,000 rows instead of the
--   135 MiB table). It costs usage reports nothing measurable: their upserts change `count` and
--   were never HOT updates (every index gets a new entry already).
-- * `usage_hourly_coordinates_hash` finds one row of a list, to read the list itself.
--
-- Adding a stored column rewrites the table once (seconds for a month of usage, a lock meanwhile:
-- usage reports wait, as during 0004).
CREATE FUNCTION coordinate_list_hash(coordinates text[]) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  -- A text[]'s text form depends on no setting, so this is immutable (Postgres calls casts stable).
  AS $$ SELECT md5(coordinates::text) $$;

ALTER TABLE usage_hourly ADD COLUMN coordinates_hash text GENERATED ALWAYS AS (coordinate_list_hash(coordinates)) STORED;
CREATE INDEX usage_hourly_window ON usage_hourly (hour)
  INCLUDE (coordinates_hash, operation_hash, client, client_version, count, last_seen);
CREATE INDEX usage_hourly_coordinates_hash ON usage_hourly (coordinates_hash);
