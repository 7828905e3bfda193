import { signAccessToken } from '@halo/kit';
import { dropSchema, TEST_JWT_SECRET, throwawaySchema } from '@halo/kit/testing';
import { startSystem, type RunningSystem } from '../tools/src/launcher';

/**
 * Starts the real, built system (`npm run build` first) as separate processes — the same
 * launcher as `npm start` — on ports offset from the defaults so it can run beside a dev
 * instance. Returns the system and a cleanup that stops it and drops its throwaway schemas.
 */
export async function startE2ESystem(opts: { portOffset: number; postgres: boolean; dataDir?: string; devOidc?: boolean }) {
  const schemas = {
    content: throwawaySchema('e2e_content'),
    auth: throwawaySchema('e2e_auth'),
    catalog: throwawaySchema('e2e_catalog'),
  };
  const logs: string[] = [];
  const dropAll = async () => {
    if (opts.postgres) for (const schema of Object.values(schemas)) await dropSchema(schema);
  };
  const system: RunningSystem = await startSystem({
    portOffset: opts.portOffset,
    devOidc: opts.devOidc ?? false,
    env: {
      HALO_ENV: 'test',
      LOG_LEVEL: 'warn',
      SEED_DEMO_DATA: 'true',
      JWT_SECRET: TEST_JWT_SECRET,
      ...(opts.postgres
        ? { DATABASE_URL: process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test' }
        : { DATABASE_URL: '' }),
    },
    envFor: {
      content: opts.postgres ? { DB_SCHEMA: schemas.content } : { DATA_DIR: `${opts.dataDir}/content` },
      auth: opts.postgres ? { DB_SCHEMA: schemas.auth } : { DATA_DIR: `${opts.dataDir}/auth` },
      catalog: opts.postgres ? { DB_SCHEMA: schemas.catalog } : { DATA_DIR: `${opts.dataDir}/catalog` },
    },
    onLog: (name, line) => logs.push(`${name}| ${line}`),
  }).catch(async (err: unknown) => {
    // The processes may have created their schemas before one of them failed.
    await dropAll();
    throw new Error(`${(err as Error).message}\n${logs.slice(-30).join('\n')}`);
  });
  return {
    system,
    url: system.gatewayUrl,
    direct: (name: string) => system.processes.find((p) => p.name === name)!.url,
    logs,
    async stop() {
      await system.stop();
      await dropAll();
    },
  };
}

export async function gql(url: string, query: string, variables?: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as { data?: any; errors?: any[] } };
}

/** `Authorization` header with a token signed by the system's secret, as auth would issue it. */
export function bearer(sub: string, name: string, role: 'user' | 'admin'): Record<string, string> {
  return { authorization: `Bearer ${signAccessToken({ sub, name, role }, TEST_JWT_SECRET, 300)}` };
}
