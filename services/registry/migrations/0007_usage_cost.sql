-- The estimated cost of the requests counted (docs/registry.md, "Usage"): a gateway reports, per
-- row, the sum of the cost its cost analysis estimated for each request (with that request's
-- variables) and how many of the row's requests that sum covers. `cost_requests` is 0 for every
-- row counted before this migration and for reports from a gateway that sends no cost, so the
-- cost per request is `cost_sum / cost_requests` over the rows that have one, never a guess.
--
-- Adding columns with a constant default rewrites nothing. The window index is rebuilt with the
-- two columns so "top operations by cost" reads the window by index only, as the other reads do
-- (0006); rebuilding it takes seconds for a month of usage, a lock meanwhile (usage reports wait).
ALTER TABLE usage_hourly ADD COLUMN cost_sum double precision NOT NULL DEFAULT 0;
ALTER TABLE usage_hourly ADD COLUMN cost_requests bigint NOT NULL DEFAULT 0;
DROP INDEX usage_hourly_window;
CREATE INDEX usage_hourly_window ON usage_hourly (hour)
  INCLUDE (coordinates_hash, operation_hash, client, client_version, count, last_seen, cost_sum, cost_requests);
