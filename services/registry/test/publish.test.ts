import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { generateServiceKey } from '@halo/kit/auth';
import { createLogger } from '@halo/kit/logging';
import { EXIT_CANNOT_START } from '@halo/kit/process';
import { openTestDb, startTestService, TEST_SERVICE_ENV, testIdentityEnv, type TestDb, type TestService } from '@halo/kit/testing';
import { catalogService } from '../../catalog/src/service';
import { registryService, type RegistryService } from '../src/service';
import { call, serviceToken } from './helpers';

/**
 * A service publishes its own contract: after start (REGISTRY_PUBLISH_ON_START, the embedded
 * mode) and as the one-shot of the Helm hook (HALO_PUBLISH_CONTRACT_ONLY, the built process).
 */
const ROOT = resolve(__dirname, '../../..');
let reg: TestService<RegistryService>;

beforeAll(async () => {
  // No API key is exchanged here: auth's address is never called.
  reg = await startTestService(registryService, { AUTH_GRPC_ADDR: '127.0.0.1:1' });
});
afterAll(async () => reg?.close());

const catalogVersions = async () =>
  (await call(reg.base, 'GET', '/v1/services/catalog/versions', undefined, await serviceToken('gateway'))).body.versions as {
    version: number;
    url: string;
    author: string;
  }[];

it('REGISTRY_PUBLISH_ON_START: the started service publishes its contract (its own URL), without delaying its start', async () => {
  const db: TestDb = await openTestDb('catalog');
  const config = catalogService.loadConfig({
    ...TEST_SERVICE_ENV,
    ...testIdentityEnv('catalog'),
    REGISTRY_URL: reg.base,
    REGISTRY_PUBLISH_ON_START: 'true',
  });
  const catalog = await catalogService.start(config, createLogger('catalog', 'silent'), { db });
  try {
    const url = `http://127.0.0.1:${catalog.httpPort}`;
    let versions = await catalogVersions();
    for (let i = 0; i < 100 && versions[0]?.url !== url; i++) {
      await new Promise((r) => setTimeout(r, 100));
      versions = await catalogVersions();
    }
    expect(versions[0]).toMatchObject({ url, author: 'service:catalog' });
  } finally {
    await catalog.stop();
    await db.drop();
  }
});

it('REGISTRY_PUBLISH_ON_START refused: the service is not ready, and /readyz says why', async () => {
  const db: TestDb = await openTestDb('catalog');
  const config = catalogService.loadConfig({
    ...TEST_SERVICE_ENV,
    ...testIdentityEnv('catalog'),
    // A key the registry does not trust: the publish is refused (401), not unreachable.
    SERVICE_SIGNING_KEY: JSON.stringify(generateServiceKey('catalog', 'rogue').privateJwk),
    REGISTRY_URL: reg.base,
    REGISTRY_PUBLISH_ON_START: 'true',
  });
  const catalog = await catalogService.start(config, createLogger('catalog', 'silent'), { db });
  try {
    const readyz = async () => {
      const res = await fetch(`http://127.0.0.1:${catalog.httpPort}/readyz`);
      return { status: res.status, body: (await res.json()) as { status: string; reason?: string } };
    };
    let r = await readyz();
    for (let i = 0; i < 100 && r.status === 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      r = await readyz();
    }
    expect(r).toEqual({
      status: 503,
      body: { status: 'unavailable', reason: 'contract refused by the registry: publish refused (401): Invalid token' },
    });
  } finally {
    await catalog.stop();
    await db.drop();
  }
});

describe('HALO_PUBLISH_CONTRACT_ONLY (the built catalog, as the Helm hook runs it)', () => {
  // Each case starts the built process once or twice, which takes many seconds on a loaded machine.
  const SPAWNING = 90_000;
  // Asynchronous: the registry answering it runs in this very process. The environment is the
  // hook pod's (helm/*/templates/_helpers.tpl, halo.derivedEnv with "publish"): a production
  // process given its port, its signing key and the registry, and no database, JWT secret or Redis.
  const run = (env: Record<string, string>, service: 'catalog' | 'payments' = 'catalog') =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((done) => {
      const child = spawn(process.execPath, [resolve(ROOT, `services/${service}/dist/main.js`)], {
        env: {
          PATH: process.env.PATH,
          HALO_ENV: 'production',
          HTTP_PORT: '4003',
          SERVICE_SIGNING_KEY: testIdentityEnv(service).SERVICE_SIGNING_KEY,
          HALO_PUBLISH_CONTRACT_ONLY: 'true',
          ...env,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('close', (status) => done({ status, stdout, stderr }));
    });

  it(
    'publishes and exits 0; again: unchanged, exits 0',
    async () => {
      const first = await run({ REGISTRY_URL: reg.base, SERVICE_PUBLIC_URL: 'http://catalog.halo.svc:4003' });
      expect([first.status, first.stderr]).toEqual([0, '']);
      expect(first.stdout).toMatch(/^catalog: contract published as version \d+ \(composition \d+\)\n$/);
      const again = await run({ REGISTRY_URL: reg.base, SERVICE_PUBLIC_URL: 'http://catalog.halo.svc:4003' });
      expect(again.stdout).toMatch(/^catalog: contract unchanged at version \d+/);
      expect(again.status).toBe(0);
    },
    SPAWNING,
  );

  it(
    'needs none of what serving needs: payments, which refuses to serve in production without Redis, publishes without it',
    async () => {
      const res = await run({ REGISTRY_URL: reg.base, SERVICE_PUBLIC_URL: 'http://payments.halo.svc:4004' }, 'payments');
      expect([res.status, res.stderr]).toEqual([0, '']);
      expect(res.stdout).toMatch(/^payments: contract published as version \d+ \(composition \d+\)\n$/);
    },
    SPAWNING,
  );

  it(
    'a breaking change clients use: refused, naming them; with REGISTRY_PUBLISH_ACKNOWLEDGE (publish.acknowledge) it goes, recorded',
    async () => {
      // The registry's catalog has a field the built one lacks, which a client used this hour.
      const current = (await call(reg.base, 'GET', '/v1/services/catalog/versions', undefined, await serviceToken('gateway'))).body
        .versions[0] as { version: number };
      const served = (
        await call(reg.base, 'GET', `/v1/services/catalog/versions/${current.version}`, undefined, await serviceToken('gateway'))
      ).body.contract as { sdl: string };
      const withSku = { ...served, sdl: served.sdl.replace(/(type Product @key[^{]*\{)/, '$1\n  sku: String') };
      expect((await call(reg.base, 'POST', '/v1/publish', { contract: withSku }, await serviceToken('catalog'))).status).toBe(201);
      const usage = {
        gateway: { id: 'gw-hook-test', composition: null },
        reports: [
          {
            hour: new Date().toISOString(),
            client: 'web',
            operation: { hash: 'sku-op', name: 'Skus', body: 'query Skus { products { data { sku } } }' },
            coordinates: ['Product', 'Product.sku'],
            count: 2,
          },
        ],
      };
      expect((await call(reg.base, 'POST', '/v1/usage', usage, await serviceToken('gateway'))).status).toBe(202);
      const env = { REGISTRY_URL: reg.base, SERVICE_PUBLIC_URL: 'http://catalog.halo.svc:4003' };
      const refused = await run(env);
      expect(refused.status).toBe(1);
      expect(refused.stderr).toMatch(
        /^catalog: contract not published: publish refused \(422\): Check failed — Product\.sku: breaking and used 2 times/,
      );
      const acked = await run({ ...env, REGISTRY_PUBLISH_ACKNOWLEDGE: 'web moved off sku (#123)' });
      expect([acked.status, acked.stderr]).toEqual([0, '']);
      const [latest] = (await call(reg.base, 'GET', '/v1/services/catalog/versions', undefined, await serviceToken('gateway'))).body
        .versions;
      expect(latest).toMatchObject({ author: 'service:catalog', acknowledgement: 'web moved off sku (#123)' });
    },
    SPAWNING,
  );

  it(
    'refused (a key the registry does not trust): exit 1 with one line',
    async () => {
      const res = await run({
        REGISTRY_URL: reg.base,
        SERVICE_SIGNING_KEY: JSON.stringify(generateServiceKey('catalog', 'rogue').privateJwk),
      });
      expect(res.status).toBe(1);
      expect(res.stderr).toBe('catalog: contract not published: publish refused (401): Invalid token\n');
    },
    SPAWNING,
  );

  it(
    'registry unreachable: exit 3 with one line; without a signing key: exit 78 (a configuration that can never start) naming the variable',
    async () => {
      const down = await run({ REGISTRY_URL: 'http://127.0.0.1:1' });
      expect(down.status).toBe(3);
      expect(down.stderr).toMatch(/^catalog: contract not published: registry unreachable at http:\/\/127\.0\.0\.1:1: [^\n]+\n$/);
      const keyless = await run({ REGISTRY_URL: reg.base, SERVICE_SIGNING_KEY: '' });
      expect(keyless.status).toBe(EXIT_CANNOT_START);
      expect(keyless.stderr).toMatch(/^catalog: Invalid configuration: SERVICE_SIGNING_KEY: is required to publish/);
    },
    SPAWNING,
  );
});
