import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { generateServiceKey, type ServiceKeyPair } from '@halo/kit/launch';
import { dropSchema, freePort, TEST_DATABASE_URL, testIdentityEnv, throwawaySchema } from '@halo/kit/testing';
import { removeDevCredentials, writeDevCredentials } from './dev-credentials';

const ROOT = resolve(__dirname, '../..');

export interface TestRegistry {
  base: string;
  port: number;
  /** The developer key the registry trusts, whose credentials file npm start would leave for this checkout's CLIs. */
  developer: ServiceKeyPair;
  /** Ends the process and removes its schema and credentials file (once: a second call does nothing). */
  stop(): Promise<void>;
}

/**
 * For the CLIs' tests: a real registry process (its built main.js, on a throwaway schema of the
 * test database) in development mode, as `npm start` runs it — trusting a developer key, whose
 * credentials file is left where npm start leaves it. `stop` ends it and removes what it made.
 */
export async function startTestRegistry(schemaPrefix: string): Promise<TestRegistry> {
  const schema = throwawaySchema(schemaPrefix);
  const developer = generateServiceKey('developer', 'test');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const identity = testIdentityEnv('registry');
  writeDevCredentials(port, developer);
  const registry = spawn(process.execPath, [resolve(ROOT, 'services/registry/dist/main.js')], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HALO_ENV: 'development',
      LOG_LEVEL: 'warn',
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: String(port),
      GRPC_PORT: '0',
      DATABASE_URL: TEST_DATABASE_URL,
      DB_SCHEMA: schema,
      AUTH_GRPC_ADDR: '127.0.0.1:9',
      ...identity,
      SERVICE_TRUSTED_KEYS: JSON.stringify({
        keys: [...(JSON.parse(identity.SERVICE_TRUSTED_KEYS!) as { keys: object[] }).keys, developer.publicJwk],
      }),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  let stopped: Promise<void> | undefined;
  const stop = () => (stopped ??= end());
  const end = async () => {
    if (registry.exitCode === null && registry.signalCode === null) {
      registry.kill('SIGTERM');
      await new Promise((r) => registry.once('exit', r));
    }
    removeDevCredentials(port);
    await dropSchema(schema);
  };
  for (let i = 0; i < 300; i++) {
    const ready = await fetch(`${base}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) return { base, port, developer, stop };
    await new Promise((r) => setTimeout(r, 100));
  }
  await stop();
  throw new Error('the registry did not become ready');
}
