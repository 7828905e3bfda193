import type { Db, Queryable } from '@halo/kit/db';
import type {
  ActiveOperation,
  ClientOperationStore,
  ClientVersionSummary,
  ListDiff,
  RegisteredUse,
  StoredOperation,
} from '../domain/client-operations';

type VersionRow = { client: string; version: string; operations: number; pushed_at: Date; pushed_by: string; retired_at: Date | null };
const toSummary = (r: VersionRow): ClientVersionSummary => ({
  client: r.client,
  version: r.version,
  operations: r.operations,
  pushedAt: r.pushed_at.toISOString(),
  pushedBy: r.pushed_by,
  retiredAt: r.retired_at?.toISOString() ?? null,
});
const SUMMARY = `SELECT v.client, v.version, v.pushed_at, v.pushed_by, v.retired_at,
         (SELECT count(*) FROM client_operations o WHERE o.client = v.client AND o.version = v.version)::integer AS operations
    FROM client_versions v`;

/**
 * Client apps' operation lists (migrations/0008_client_operations.sql): one row per client version
 * (`client_versions`), its operations with the coordinates each uses (`client_operations`).
 */
export class ClientOperationsSql implements ClientOperationStore {
  constructor(
    private readonly db: Db,
    private readonly q: Queryable = db,
  ) {}

  /**
   * The version's row is created or locked first (`FOR UPDATE` through the upsert), so two pushes
   * of one version, or a push and a retirement, take turns; a new version's row is only committed
   * with its list.
   */
  replace(
    client: string,
    version: string,
    pushedBy: string,
    operations: readonly StoredOperation[],
    diff: (before: readonly StoredOperation[]) => ListDiff,
  ): Promise<ListDiff | null> {
    return this.db.transaction(async (tx) => {
      const { rows } = await tx.query<{ retired_at: Date | null }>(
        `INSERT INTO client_versions (client, version, pushed_by) VALUES ($1, $2, $3)
         ON CONFLICT (client, version) DO UPDATE SET client = EXCLUDED.client
         RETURNING retired_at`,
        [client, version, pushedBy],
      );
      if (rows[0]!.retired_at !== null) return null;
      const before = await tx.query<StoredOperation>(
        'SELECT id, name, body, coordinates FROM client_operations WHERE client = $1 AND version = $2',
        [client, version],
      );
      const changed = diff(before.rows);
      if (changed.added === 0 && changed.removed === 0) return changed;
      await tx.query('DELETE FROM client_operations WHERE client = $1 AND version = $2', [client, version]);
      await tx.query(
        `INSERT INTO client_operations (client, version, id, name, body, coordinates)
         SELECT $1, $2, id, name, body, coordinates
           FROM json_to_recordset($3::json) AS o(id text, name text, body text, coordinates text[])`,
        [client, version, JSON.stringify(operations)],
      );
      await tx.query('UPDATE client_versions SET pushed_at = now(), pushed_by = $3 WHERE client = $1 AND version = $2', [
        client,
        version,
        pushedBy,
      ]);
      return changed;
    });
  }

  async versions(client: string | undefined): Promise<ClientVersionSummary[]> {
    const { rows } = await this.q.query<VersionRow>(
      `${SUMMARY} WHERE ($1::text IS NULL OR v.client = $1) ORDER BY v.client, v.pushed_at DESC, v.version`,
      [client ?? null],
    );
    return rows.map(toSummary);
  }

  async version(client: string, version: string): Promise<ClientVersionSummary | null> {
    const { rows } = await this.q.query<VersionRow>(`${SUMMARY} WHERE v.client = $1 AND v.version = $2`, [client, version]);
    return rows[0] ? toSummary(rows[0]) : null;
  }

  async operations(client: string, version: string): Promise<{ id: string; name: string; body: string }[]> {
    const { rows } = await this.q.query<{ id: string; name: string; body: string }>(
      'SELECT id, name, body FROM client_operations WHERE client = $1 AND version = $2 ORDER BY name, id',
      [client, version],
    );
    return rows;
  }

  async retire(client: string, version: string, by: string): Promise<string | null> {
    const { rows } = await this.q.query<{ retired_at: Date }>(
      `UPDATE client_versions SET retired_at = coalesce(retired_at, now()), retired_by = coalesce(retired_by, $3)
        WHERE client = $1 AND version = $2
        RETURNING retired_at`,
      [client, version, by],
    );
    return rows[0]?.retired_at.toISOString() ?? null;
  }

  async active(): Promise<ActiveOperation[]> {
    // Byte order (COLLATE "C"), whatever the database's locale: the feed's ETag hashes this order.
    const { rows } = await this.q.query<ActiveOperation>(
      `SELECT o.id, o.body, o.client, o.version
         FROM client_operations o
         JOIN client_versions v ON v.client = o.client AND v.version = o.version
        WHERE v.retired_at IS NULL
        ORDER BY o.client COLLATE "C", o.version COLLATE "C", o.id COLLATE "C"`,
    );
    return rows;
  }

  async activeUsing(paths: readonly string[], excludeClients: readonly string[]): Promise<RegisteredUse[]> {
    // A pre-filter, as for recorded usage; the domain's usageOf decides which change each uses.
    const { rows } = await this.q.query<{
      client: string;
      version: string;
      id: string;
      name: string;
      pushed_at: Date;
      coordinates: string[];
    }>(
      `SELECT o.client, o.version, o.id, o.name, v.pushed_at, o.coordinates
         FROM client_operations o
         JOIN client_versions v ON v.client = o.client AND v.version = o.version
        WHERE v.retired_at IS NULL
          AND NOT (o.client = ANY($2::text[]))
          AND EXISTS (SELECT 1 FROM unnest(o.coordinates) c, unnest($1::text[]) p WHERE c = p OR starts_with(c, p || '.'))
        ORDER BY o.client, o.version, o.name, o.id`,
      [paths, excludeClients],
    );
    return rows.map((r) => ({
      client: r.client,
      version: r.version,
      id: r.id,
      name: r.name,
      pushedAt: r.pushed_at.toISOString(),
      coordinates: r.coordinates,
    }));
  }
}
