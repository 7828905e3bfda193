import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { DEV_JWT_SECRET, SERVICE_NAMES } from '@halo/kit/config';
import { EXIT_CANNOT_START } from '@halo/kit/process';
import { TEST_DATABASE_URL } from '@halo/kit/testing';

/**
 * With HALO_ENV=production every process refuses, at start-up, a secret or key committed to this
 * repository (packages/kit/src/config/dev-secrets.ts): one line naming the variable, exit 1, nothing
 * served. The built processes, as a deployment starts them.
 */
const ROOT = resolve(__dirname, '..');
const entry = (name: string) => resolve(ROOT, name === 'gateway' ? 'gateway/dist/main.js' : `services/${name}/dist/main.js`);

function start(name: string, env: Record<string, string>) {
  const run = spawnSync(process.execPath, [entry(name)], {
    env: {
      PATH: process.env.PATH ?? '',
      HALO_ENV: 'production',
      DATABASE_URL: TEST_DATABASE_URL,
      HTTP_PORT: '0',
      GRPC_PORT: '0',
      HTTP_HOST: '127.0.0.1',
      METRICS_PORT: 'off',
      ...env,
    },
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { status: run.status, lines: run.stderr.trim().split('\n') };
}

it.each(['gateway', ...SERVICE_NAMES])('%s refuses the embedded mode’s JWT secret with one line naming JWT_SECRET', (name) => {
  const { status, lines } = start(name, { JWT_SECRET: DEV_JWT_SECRET });
  // A configuration that can never start: the kit's EX_CONFIG, so no supervisor retries it.
  expect(status).toBe(EXIT_CANNOT_START);
  expect(lines).toEqual([
    `${name}: Invalid configuration: JWT_SECRET: holds a development secret committed to the Halo repository, refused when HALO_ENV=production (generate your own)`,
  ]);
});

it('refuses a private key once committed for deploy/local, and the chart CI values’ placeholder, naming the variable', () => {
  const localKey =
    '{"crv":"Ed25519","d":"An6SfuwnIdgc-AT6Lh948z-9g0uBYnMvLJb5ba97Fi0","x":"0-jV2RdIKV89ietbgpuTIvE49DZ-1KEY4y50gJ368YU","kty":"OKP","kid":"gateway:local-dev","alg":"EdDSA"}';
  expect(start('gateway', { SERVICE_SIGNING_KEY: localKey }).lines[0]).toMatch(
    /^gateway: Invalid configuration: SERVICE_SIGNING_KEY: holds a development secret/,
  );
  const placeholder = start('auth', { JWT_SECRET: 'HALO-PLACEHOLDER-NOT-A-SECRET-jwt-00000000000000' });
  expect(placeholder.lines[0]).toMatch(/^auth: Invalid configuration: JWT_SECRET: holds a development secret/);
  expect(
    start('auth', { OAUTH_PROVIDERS: 'dev', OAUTH_DEV_CLIENT_SECRET: 'halo-dev-only-oidc-client-secret--never-use-in-production' })
      .lines[0],
  ).toMatch(/^auth: Invalid configuration: OAUTH_DEV_CLIENT_SECRET: holds a development secret/);
});

it('outside production the same secret is accepted (the embedded mode and the suites use them)', () => {
  // It gets past the configuration: whatever stops it later (no peers here) is not this refusal.
  const { lines } = start('gateway', { HALO_ENV: 'development', JWT_SECRET: DEV_JWT_SECRET, SUPERGRAPH_PATH: '/nonexistent' });
  expect(lines.join('\n')).not.toMatch(/development secret/);
});
