import type { Contract, OperationUsage } from '@halo/contracts';
import type { Db, Queryable } from '@halo/kit';
import type { Acknowledgement, CompositionRecord, RegistryStore, UsageReport, VersionRecord } from '../domain/model';

type VersionRow = { service: string; version: number; hash: string; url: string; contract: Contract; author: string; created_at: Date };
const toVersion = (r: VersionRow): VersionRecord => ({
  service: r.service,
  version: r.version,
  hash: r.hash,
  url: r.url,
  contract: r.contract,
  author: r.author,
  createdAt: r.created_at.toISOString(),
});

/** Compositions never change once written: the latest one is kept in memory by number. */
const compositionCache = new WeakMap<Db, CompositionRecord>();

/** The registry's SQL (schema `registry`, migrations/0001_init.sql). */
export class PgRegistryStore implements RegistryStore {
  constructor(
    private readonly db: Db,
    private readonly q: Queryable = db,
  ) {}

  /**
   * One transaction holding a transaction-level advisory lock: publishes (and the bootstrap) of
   * every replica compose one after another, each on the state the previous one committed.
   */
  locked<T>(fn: (tx: RegistryStore) => Promise<T>): Promise<T> {
    return this.db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`${this.db.schema}.composition`]);
      return fn(new PgRegistryStore(this.db, tx));
    });
  }

  async latestHead(): Promise<{ composition: number; hash: string } | null> {
    const { rows } = await this.q.query<{ composition: number; hash: string }>(
      'SELECT composition, hash FROM compositions ORDER BY composition DESC LIMIT 1',
    );
    return rows[0] ?? null;
  }

  async composition(n: number): Promise<CompositionRecord | null> {
    const cached = compositionCache.get(this.db);
    if (cached?.composition === n) return cached;
    const { rows } = await this.q.query<Omit<CompositionRecord, 'createdAt'> & { created_at: Date }>(
      'SELECT composition, hash, supergraph, routes, openapi, services, author, created_at FROM compositions WHERE composition = $1',
      [n],
    );
    const r = rows[0];
    if (!r) return null;
    const { created_at, ...rest } = r;
    const record: CompositionRecord = { ...rest, createdAt: created_at.toISOString() };
    compositionCache.set(this.db, record);
    return record;
  }

  async currentVersions(): Promise<VersionRecord[]> {
    const { rows } = await this.q.query<VersionRow>(
      `SELECT v.service, v.version, v.hash, v.url, v.contract, v.author, v.created_at
         FROM versions v
         JOIN jsonb_each_text((SELECT services FROM compositions ORDER BY composition DESC LIMIT 1)) s
           ON s.key = v.service AND s.value::integer = v.version
        ORDER BY v.service`,
    );
    return rows.map(toVersion);
  }

  async versions(service: string): Promise<VersionRecord[]> {
    const { rows } = await this.q.query<VersionRow>(
      'SELECT service, version, hash, url, contract, author, created_at FROM versions WHERE service = $1 ORDER BY version DESC',
      [service],
    );
    return rows.map(toVersion);
  }

  async insertVersion(v: Omit<VersionRecord, 'version' | 'createdAt'>): Promise<number> {
    const { rows } = await this.q.query<{ version: number }>(
      `INSERT INTO versions (service, version, hash, url, contract, author)
       SELECT $1, coalesce(max(version), 0) + 1, $2, $3, $4, $5 FROM versions WHERE service = $1
       RETURNING version`,
      [v.service, v.hash, v.url, JSON.stringify(v.contract), v.author],
    );
    return rows[0]!.version;
  }

  async insertComposition(c: Omit<CompositionRecord, 'composition' | 'createdAt'>): Promise<number> {
    const { rows } = await this.q.query<{ composition: number }>(
      `INSERT INTO compositions (composition, hash, supergraph, routes, openapi, services, author)
       SELECT coalesce(max(composition), 0) + 1, $1, $2, $3, $4, $5, $6 FROM compositions
       RETURNING composition`,
      [c.hash, c.supergraph, JSON.stringify(c.routes), JSON.stringify(c.openapi), JSON.stringify(c.services), c.author],
    );
    return rows[0]!.composition;
  }

  async insertAcknowledgements(acks: readonly Acknowledgement[]): Promise<void> {
    if (acks.length === 0) return;
    await this.q.query(
      `INSERT INTO acknowledgements (service, version, type, path, message, reason, author)
       SELECT service, version, type, path, message, reason, author
         FROM json_to_recordset($1::json) AS a(service text, version integer, type text, path text, message text, reason text, author text)`,
      [JSON.stringify(acks)],
    );
  }

  async usageOf(paths: readonly string[], since: Date): Promise<OperationUsage[]> {
    // A pre-filter; the domain's usageOf decides which change each operation uses.
    const { rows } = await this.q.query<{
      name: string;
      hash: string;
      client: string;
      count: string;
      last_seen: Date;
      coordinates: string[];
    }>(
      `SELECT operation_name AS name, operation_hash AS hash, client, sum(count) AS count, max(last_seen) AS last_seen, min(coordinates) AS coordinates
         FROM usage_hourly u
        WHERE hour >= $1
          AND EXISTS (SELECT 1 FROM unnest(u.coordinates) c, unnest($2::text[]) p WHERE c = p OR starts_with(c, p || '.'))
        GROUP BY operation_name, operation_hash, client`,
      [since, paths],
    );
    return rows.map((r) => ({
      name: r.name,
      hash: r.hash,
      client: r.client,
      count: Number(r.count),
      lastSeen: r.last_seen.toISOString(),
      coordinates: r.coordinates,
    }));
  }

  async addUsage(reports: readonly UsageReport[]): Promise<void> {
    if (reports.length === 0) return;
    const rows = reports.map((r) => ({
      hour: r.hour,
      hash: r.operation.hash,
      client: r.client,
      name: r.operation.name,
      body: r.operation.body,
      coordinates: r.coordinates,
      count: r.count,
    }));
    await this.q.query(
      `INSERT INTO usage_hourly (hour, operation_hash, client, operation_name, operation_body, coordinates, count)
       SELECT hour, hash, client, name, body, coordinates, count
         FROM json_to_recordset($1::json) AS r(hour timestamptz, hash text, client text, name text, body text, coordinates text[], count bigint)
       ON CONFLICT (hour, operation_hash, client) DO UPDATE
         SET count = usage_hourly.count + EXCLUDED.count, last_seen = now(), coordinates = EXCLUDED.coordinates`,
      [JSON.stringify(rows)],
    );
  }

  async pruneUsage(before: Date): Promise<number> {
    return (await this.q.query('DELETE FROM usage_hourly WHERE hour < $1', [before])).rowCount;
  }

  async sawGateway(id: string, composition: number | null): Promise<void> {
    await this.q.query(
      `INSERT INTO gateways (id, composition, last_seen) VALUES ($1, $2, now())
       ON CONFLICT (id) DO UPDATE SET composition = EXCLUDED.composition, last_seen = now()`,
      [id, composition],
    );
  }

  async gateways(): Promise<{ id: string; composition: number | null; lastSeen: string }[]> {
    const { rows } = await this.q.query<{ id: string; composition: number | null; last_seen: Date }>(
      'SELECT id, composition, last_seen FROM gateways ORDER BY id',
    );
    return rows.map((r) => ({ id: r.id, composition: r.composition, lastSeen: r.last_seen.toISOString() }));
  }
}
