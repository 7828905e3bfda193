-- Usage per client version too (docs/registry.md, "Gateway"): a gateway reports the version a
-- client declared (`apollographql-client-version`), and a check names it (`GetProducts (ios-app
-- 2.3.1, 12)`). '' is an unknown version: every row counted before this migration, and every
-- report without one. A client's versions are separate rows, so the key holds the version.
ALTER TABLE usage_hourly ADD COLUMN client_version text NOT NULL DEFAULT '';
ALTER TABLE usage_hourly DROP CONSTRAINT usage_hourly_pkey;
ALTER TABLE usage_hourly ADD PRIMARY KEY (hour, operation_hash, client, client_version);
