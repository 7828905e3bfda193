import { dropSchema, throwawaySchema } from '@halo/kit/testing';
import { startSystem, type RunningSystem } from '../tools/src/launcher';

/**
 * Starts the real, built system (`npm run build` first) as separate processes — the same
 * launcher as `npm start` — on ports offset from the defaults so it can run beside a dev
 * instance. Returns the system and a cleanup that stops it and drops its throwaway schemas.
 */
export async function startE2ESystem(opts: { portOffset: number; postgres: boolean; dataDir?: string }) {
  const schema = throwawaySchema('e2e');
  const logs: string[] = [];
  const system: RunningSystem = await startSystem({
    portOffset: opts.portOffset,
    env: {
      HALO_ENV: 'test',
      LOG_LEVEL: 'warn',
      SEED_DEMO_DATA: 'true',
      ...(opts.postgres
        ? { DATABASE_URL: process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test' }
        : { DATABASE_URL: '' }),
    },
    envFor: { content: opts.postgres ? { DB_SCHEMA: schema } : { DATA_DIR: opts.dataDir } },
    onLog: (name, line) => logs.push(`${name}| ${line}`),
  });
  return {
    system,
    url: system.gatewayUrl,
    direct: (name: string) => system.processes.find((p) => p.name === name)!.url,
    logs,
    async stop() {
      await system.stop();
      if (opts.postgres) await dropSchema(schema);
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
