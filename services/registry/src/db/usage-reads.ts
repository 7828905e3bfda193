import type { Queryable } from '@halo/kit/db';
import type { ClientUsage, CoordinateCount, HourCount, OperationCount, OperationOrder, TopOperation } from '../domain/model';

/**
 * How the top operations are ordered, as bare output names (valid in both queries that sort):
 * an operation without a reported cost (NULL) comes after every one with a cost.
 */
const ORDER_BY: Record<OperationOrder, string> = {
  requests: 'count DESC, operation_hash',
  cost: 'avg_cost DESC NULLS LAST, count DESC, operation_hash',
  totalCost: 'total_cost DESC NULLS LAST, count DESC, operation_hash',
};

/** A cost as shown: estimates are whole numbers per request, averages keep one decimal. */
const round = (n: number) => Math.round(n * 10) / 10;

/** '' is how usage_hourly keeps an unknown client version (migrations/0004_client_version.sql). */
const version = (v: string) => (v === '' ? null : v);

/**
 * The coordinate lists (by `coordinates_hash`) of rows since $2 that hold coordinate $1 (exactly:
 * an operation passing `T.f.arg` records `T.f` too, and every `Type` it touches): each distinct
 * list of the window is read once, by its hash.
 */
const LISTS_WITH = `lists AS (
    SELECT DISTINCT coordinates_hash FROM usage_hourly WHERE hour >= $2
  ), matching AS (
    SELECT coordinates_hash FROM lists l
     WHERE (SELECT u.coordinates FROM usage_hourly u WHERE u.coordinates_hash = l.coordinates_hash LIMIT 1) @> ARRAY[$1::text]
  )`;

/**
 * What the registry's readers see of usage (`usage_hourly`: per hour, operation, client and client
 * version, a count and the coordinates the operation recorded), aggregated in SQL so a month of
 * hourly rows never crosses the wire. Each query reads the window from the index
 * `usage_hourly_window` alone and groups on `coordinates_hash`, never on the lists themselves
 * (migrations/0006_usage_reads.sql); docs/benchmarks.md ("Studio data endpoints") has what they cost.
 */
export class UsageReads {
  constructor(private readonly q: Queryable) {}

  /**
   * Each coordinate's requests and distinct clients: rows summed per (list, client), then each
   * distinct list unnested once (a few hundred lists, not tens of thousands of rows).
   */
  async coordinateCounts(since: Date): Promise<CoordinateCount[]> {
    const { rows } = await this.q.query<{ coordinate: string; count: string; clients: number }>(
      `WITH sums AS (
         SELECT coordinates_hash, client, sum(count) AS n FROM usage_hourly WHERE hour >= $1 GROUP BY coordinates_hash, client
       ), lists AS (
         SELECT l.coordinates_hash,
                (SELECT u.coordinates FROM usage_hourly u WHERE u.coordinates_hash = l.coordinates_hash LIMIT 1) AS coordinates
           FROM (SELECT DISTINCT coordinates_hash FROM sums) l
       )
       SELECT c AS coordinate, sum(s.n) AS count, count(DISTINCT s.client)::integer AS clients
         FROM sums s JOIN lists l USING (coordinates_hash), unnest(l.coordinates) AS c
        GROUP BY c
        ORDER BY sum(s.n) DESC, c`,
      [since],
    );
    return rows.map((r) => ({ coordinate: r.coordinate, count: Number(r.count), clients: r.clients }));
  }

  /** Requests per hour and client version of the operations that recorded `coordinate`. */
  async coordinateHours(coordinate: string, since: Date): Promise<HourCount[]> {
    const { rows } = await this.q.query<{ hour: Date; client: string; client_version: string; count: string }>(
      `WITH ${LISTS_WITH}
       SELECT hour, client, client_version, sum(count) AS count
         FROM usage_hourly
        WHERE hour >= $2 AND coordinates_hash IN (SELECT coordinates_hash FROM matching)
        GROUP BY hour, client, client_version`,
      [coordinate, since],
    );
    return rows.map((r) => ({
      hour: r.hour.toISOString(),
      client: r.client,
      clientVersion: version(r.client_version),
      count: Number(r.count),
    }));
  }

  /**
   * The operations per client version that recorded `coordinate`, busiest first (as a check report
   * orders them); each name read from its latest row by primary key (hour, operation hash).
   */
  async coordinateOperations(coordinate: string, since: Date): Promise<OperationCount[]> {
    const { rows } = await this.q.query<{
      name: string;
      hash: string;
      client: string;
      client_version: string;
      count: string;
      last_seen: Date;
    }>(
      `WITH ${LISTS_WITH}, per AS (
         SELECT operation_hash, client, client_version, sum(count) AS count, max(last_seen) AS last_seen, max(hour) AS hour
           FROM usage_hourly
          WHERE hour >= $2 AND coordinates_hash IN (SELECT coordinates_hash FROM matching)
          GROUP BY operation_hash, client, client_version
       )
       SELECT n.operation_name AS name, p.operation_hash AS hash, p.client, p.client_version, p.count, p.last_seen
         FROM per p
         CROSS JOIN LATERAL (
           SELECT operation_name FROM usage_hourly u WHERE u.hour = p.hour AND u.operation_hash = p.operation_hash LIMIT 1
         ) n
        ORDER BY p.count DESC, n.operation_name, p.client, p.client_version`,
      [coordinate, since],
    );
    return rows.map((r) => ({
      name: r.name,
      hash: r.hash,
      client: r.client,
      clientVersion: version(r.client_version),
      count: Number(r.count),
      lastSeen: r.last_seen.toISOString(),
    }));
  }

  /**
   * The top operations of the window by `order` (requests, estimated cost per request, or in all),
   * with the clients that sent each (busiest first), and the name, body and coordinates of its
   * latest row, read by primary key (hour, operation hash) once the top `limit` are known.
   */
  async topOperations(since: Date, limit: number, order: OperationOrder): Promise<TopOperation[]> {
    const { rows } = await this.q.query<{
      hash: string;
      count: string;
      avg_cost: number | null;
      total_cost: number | null;
      last_seen: Date;
      clients: string[];
      name: string;
      body: string;
      coordinates: number;
    }>(
      `WITH per_client AS (
         SELECT operation_hash, client, sum(count) AS n, sum(cost_sum) AS cost_sum, sum(cost_requests) AS cost_requests,
                max(last_seen) AS last_seen, max(hour) AS hour
           FROM usage_hourly WHERE hour >= $1 GROUP BY operation_hash, client
       ), top AS (
         SELECT operation_hash, sum(n) AS count, max(last_seen) AS last_seen, max(hour) AS hour,
                sum(cost_sum) / NULLIF(sum(cost_requests), 0) AS avg_cost,
                sum(cost_sum) / NULLIF(sum(cost_requests), 0) * sum(n) AS total_cost,
                array_agg(client ORDER BY n DESC, client) AS clients
           FROM per_client GROUP BY operation_hash ORDER BY ${ORDER_BY[order]} LIMIT $2
       )
       SELECT t.operation_hash, t.operation_hash AS hash, t.count, t.avg_cost, t.total_cost, t.last_seen, t.clients,
              l.operation_name AS name, l.operation_body AS body, cardinality(l.coordinates) AS coordinates
         FROM top t
         CROSS JOIN LATERAL (
           SELECT operation_name, operation_body, coordinates FROM usage_hourly u
            WHERE u.hour = t.hour AND u.operation_hash = t.operation_hash ORDER BY last_seen DESC LIMIT 1
         ) l
        ORDER BY ${ORDER_BY[order]}`,
      [since, limit],
    );
    return rows.map((r) => ({
      name: r.name,
      hash: r.hash,
      body: r.body,
      clients: r.clients,
      count: Number(r.count),
      cost: r.avg_cost === null ? null : { perRequest: round(r.avg_cost), total: round(r.total_cost!) },
      lastSeen: r.last_seen.toISOString(),
      coordinates: r.coordinates,
    }));
  }

  async clientCounts(since: Date): Promise<ClientUsage[]> {
    const { rows } = await this.q.query<{ client: string; client_version: string; count: string; last_seen: Date }>(
      `SELECT client, client_version, sum(count) AS count, max(last_seen) AS last_seen
         FROM usage_hourly WHERE hour >= $1
        GROUP BY client, client_version
        ORDER BY sum(count) DESC, client, client_version`,
      [since],
    );
    return rows.map((r) => ({
      client: r.client,
      clientVersion: version(r.client_version),
      count: Number(r.count),
      lastSeen: r.last_seen.toISOString(),
    }));
  }
}
