import type { Contract, OperationUsage } from '@halo/contracts';
import type { Db, Queryable } from '@halo/kit/db';
import type {
  Acknowledgement,
  CheckRecord,
  ClientUsage,
  CompositionRecord,
  CoordinateCount,
  HourCount,
  NewCheck,
  OperationCount,
  RecordedChange,
  RegistryStore,
  OperationOrder,
  TopOperation,
  UsageReport,
  VersionRecord,
} from '../domain/model';
import { ClientOperationsSql } from './client-operations';
import { UsageReads } from './usage-reads';

type VersionRow = {
  service: string;
  version: number;
  hash: string;
  url: string;
  contract: Contract;
  author: string;
  created_at: Date;
  changes: RecordedChange[] | null;
  acknowledgement: string | null;
  rollback_of: number | null;
};
const toVersion = (r: VersionRow): VersionRecord => ({
  service: r.service,
  version: r.version,
  hash: r.hash,
  url: r.url,
  contract: r.contract,
  author: r.author,
  createdAt: r.created_at.toISOString(),
  changes: r.changes,
  acknowledgement: r.acknowledgement,
  rollbackOf: r.rollback_of,
});
const VERSION_COLUMNS = 'service, version, hash, url, contract, author, created_at, changes, acknowledgement, rollback_of';

/** Compositions never change once written: the latest one is kept in memory by number. */
const compositionCache = new WeakMap<Db, CompositionRecord>();

type CheckRow = Omit<CheckRecord, 'id' | 'createdAt'> & { id: string; created_at: Date };
const toCheck = ({ id, created_at, ...r }: CheckRow): CheckRecord => ({ ...r, id: Number(id), createdAt: created_at.toISOString() });
const CHECK_COLUMNS = 'id, service, kind, author, ok, outcome, report, acknowledgement, version, created_at';

/** The registry's SQL (schema `registry`, migrations/0001_init.sql). */
export class PgRegistryStore implements RegistryStore {
  /** What the Studio reads of usage: aggregations over `usage_hourly` (usage-reads.ts). */
  private readonly usage: UsageReads;
  /** Client apps' operation lists (client-operations.ts). */
  readonly clientOperations: ClientOperationsSql;

  constructor(
    private readonly db: Db,
    private readonly q: Queryable = db,
  ) {
    this.usage = new UsageReads(q);
    this.clientOperations = new ClientOperationsSql(db, q);
  }

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
      `SELECT v.service, v.version, v.hash, v.url, v.contract, v.author, v.created_at, v.changes, v.acknowledgement, v.rollback_of
         FROM versions v
         JOIN jsonb_each_text((SELECT services FROM compositions ORDER BY composition DESC LIMIT 1)) s
           ON s.key = v.service AND s.value::integer = v.version
        ORDER BY v.service`,
    );
    return rows.map(toVersion);
  }

  async versions(service: string): Promise<VersionRecord[]> {
    const { rows } = await this.q.query<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM versions WHERE service = $1 ORDER BY version DESC`, [
      service,
    ]);
    return rows.map(toVersion);
  }

  async version(service: string, version: number): Promise<VersionRecord | null> {
    const { rows } = await this.q.query<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM versions WHERE service = $1 AND version = $2`, [
      service,
      version,
    ]);
    return rows[0] ? toVersion(rows[0]) : null;
  }

  async insertVersion(v: Omit<VersionRecord, 'version' | 'createdAt'>): Promise<number> {
    const { rows } = await this.q.query<{ version: number }>(
      `INSERT INTO versions (service, version, hash, url, contract, author, changes, acknowledgement, rollback_of)
       SELECT $1, coalesce(max(version), 0) + 1, $2, $3, $4, $5, $6, $7, $8 FROM versions WHERE service = $1
       RETURNING version`,
      [
        v.service,
        v.hash,
        v.url,
        JSON.stringify(v.contract),
        v.author,
        v.changes ? JSON.stringify(v.changes) : null,
        v.acknowledgement ?? null,
        v.rollbackOf ?? null,
      ],
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

  async requestsSince(since: Date, excludeClients: readonly string[]): Promise<number> {
    const { rows } = await this.q.query<{ n: string | null }>(
      'SELECT sum(count) AS n FROM usage_hourly WHERE hour >= $1 AND NOT (client = ANY($2::text[]))',
      [since, excludeClients],
    );
    return Number(rows[0]?.n ?? 0);
  }

  async usageOf(paths: readonly string[], since: Date, excludeClients: readonly string[]): Promise<OperationUsage[]> {
    // A pre-filter; the domain's usageOf decides which change each operation uses.
    const { rows } = await this.q.query<{
      name: string;
      hash: string;
      client: string;
      client_version: string;
      count: string;
      last_seen: Date;
      coordinates: string[];
    }>(
      `SELECT operation_name AS name, operation_hash AS hash, client, client_version, sum(count) AS count, max(last_seen) AS last_seen,
              min(coordinates) AS coordinates
         FROM usage_hourly u
        WHERE hour >= $1
          AND NOT (client = ANY($3::text[]))
          AND EXISTS (SELECT 1 FROM unnest(u.coordinates) c, unnest($2::text[]) p WHERE c = p OR starts_with(c, p || '.'))
        GROUP BY operation_name, operation_hash, client, client_version`,
      [since, paths, excludeClients],
    );
    return rows.map((r) => ({
      name: r.name,
      hash: r.hash,
      client: r.client,
      clientVersion: r.client_version === '' ? null : r.client_version,
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
      client_version: r.clientVersion ?? '',
      name: r.operation.name,
      body: r.operation.body,
      coordinates: r.coordinates,
      count: r.count,
      cost_sum: r.cost?.sum ?? 0,
      cost_requests: r.cost?.requests ?? 0,
    }));
    await this.q.query(
      `INSERT INTO usage_hourly
         (hour, operation_hash, client, client_version, operation_name, operation_body, coordinates, count, cost_sum, cost_requests)
       SELECT hour, hash, client, client_version, name, body, coordinates, count, cost_sum, cost_requests
         FROM json_to_recordset($1::json)
           AS r(hour timestamptz, hash text, client text, client_version text, name text, body text, coordinates text[], count bigint,
                cost_sum double precision, cost_requests bigint)
       ON CONFLICT (hour, operation_hash, client, client_version) DO UPDATE
         SET count = usage_hourly.count + EXCLUDED.count, last_seen = now(), coordinates = EXCLUDED.coordinates,
             cost_sum = usage_hourly.cost_sum + EXCLUDED.cost_sum, cost_requests = usage_hourly.cost_requests + EXCLUDED.cost_requests`,
      [JSON.stringify(rows)],
    );
  }

  async pruneUsage(before: Date): Promise<number> {
    return (await this.q.query('DELETE FROM usage_hourly WHERE hour < $1', [before])).rowCount;
  }

  async insertCheck(c: NewCheck): Promise<number> {
    const { rows } = await this.q.query<{ id: string }>(
      `INSERT INTO checks (service, kind, author, ok, outcome, report, acknowledgement, version)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
      [c.service, c.kind, c.author, c.ok, c.outcome, JSON.stringify(c.report), c.acknowledgement, c.version],
    );
    return Number(rows[0]!.id);
  }

  async checks(service: string | undefined, limit: number): Promise<CheckRecord[]> {
    const { rows } = await this.q.query<CheckRow>(
      `SELECT ${CHECK_COLUMNS} FROM checks WHERE ($1::text IS NULL OR service = $1) ORDER BY created_at DESC, id DESC LIMIT $2`,
      [service ?? null, limit],
    );
    return rows.map(toCheck);
  }

  async checkById(id: number): Promise<CheckRecord | null> {
    const { rows } = await this.q.query<CheckRow>(`SELECT ${CHECK_COLUMNS} FROM checks WHERE id = $1`, [id]);
    return rows[0] ? toCheck(rows[0]) : null;
  }

  async pruneChecks(before: Date): Promise<number> {
    return (await this.q.query('DELETE FROM checks WHERE created_at < $1', [before])).rowCount;
  }

  coordinateCounts(since: Date): Promise<CoordinateCount[]> {
    return this.usage.coordinateCounts(since);
  }

  coordinateHours(coordinate: string, since: Date): Promise<HourCount[]> {
    return this.usage.coordinateHours(coordinate, since);
  }

  coordinateOperations(coordinate: string, since: Date): Promise<OperationCount[]> {
    return this.usage.coordinateOperations(coordinate, since);
  }

  topOperations(since: Date, limit: number, order: OperationOrder): Promise<TopOperation[]> {
    return this.usage.topOperations(since, limit, order);
  }

  clientCounts(since: Date): Promise<ClientUsage[]> {
    return this.usage.clientCounts(since);
  }

  async sawGateway(id: string, composition: number | null): Promise<void> {
    await this.q.query(
      `INSERT INTO gateways (id, composition, last_seen) VALUES ($1, $2, now())
       ON CONFLICT (id) DO UPDATE SET composition = EXCLUDED.composition, last_seen = now()`,
      [id, composition],
    );
  }

  async spendToken(jti: string, expiresAt: Date): Promise<boolean> {
    // A token is accepted a little past its expiry (clock tolerance): kept a minute longer than that.
    await this.q.query("DELETE FROM spent_tokens WHERE expires_at < now() - interval '1 minute'");
    const { rowCount } = await this.q.query('INSERT INTO spent_tokens (jti, expires_at) VALUES ($1, $2) ON CONFLICT (jti) DO NOTHING', [
      jti,
      expiresAt,
    ]);
    return rowCount === 1;
  }

  async gateways(): Promise<{ id: string; composition: number | null; lastSeen: string }[]> {
    const { rows } = await this.q.query<{ id: string; composition: number | null; last_seen: Date }>(
      'SELECT id, composition, last_seen FROM gateways ORDER BY id',
    );
    return rows.map((r) => ({ id: r.id, composition: r.composition, lastSeen: r.last_seen.toISOString() }));
  }
}
