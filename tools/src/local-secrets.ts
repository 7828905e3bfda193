import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { generateServiceKey, grpcCallersOf, SERVICE_NAMES, type ServiceName } from '@halo/kit/launch';

/**
 * `npm run local-secrets`: the secrets of a local cluster (deploy/local), made fresh on this machine
 * instead of committed: a JWT secret and an Ed25519 key per gRPC caller into `secrets.env` (the
 * kustomization's Secret), and each gRPC server's trusted public keys into `trusted-keys.yaml` (a
 * patch over the rendered chart). Both are git-ignored; run it once before `kubectl apply -k
 * deploy/local`, again to rotate. The database passwords are init-roles.sql's (local only).
 */
const DIR = resolve(process.argv[2] ?? resolve(__dirname, '../../deploy/local'));
const DB_SERVICES: ServiceName[] = ['auth', 'content', 'catalog', 'payments', 'chat'];

export function localSecrets(dir: string, id = `local-${new Date().toISOString().slice(0, 10)}`): void {
  const callers = [...new Set(SERVICE_NAMES.flatMap(grpcCallersOf))];
  const keys = Object.fromEntries(callers.map((name) => [name, generateServiceKey(name, id)]));
  const env = [
    '# Made by `npm run local-secrets` for this machine only; never commit it.',
    `jwt-secret=${randomBytes(32).toString('base64url')}`,
    ...DB_SERVICES.map((s) => `${s}-database-url=postgres://${s}:local-dev-${s}-password@postgres:5432/halo`),
    'redis-url=redis://redis:6379/0',
    ...callers.map((name) => `${name}-signing-key=${JSON.stringify(keys[name]!.privateJwk)}`),
  ];
  writeFileSync(resolve(dir, 'secrets.env'), `${env.join('\n')}\n`, { mode: 0o600 });
  const patches = SERVICE_NAMES.filter((server) => grpcCallersOf(server).length > 0).map((server) => {
    const trusted = JSON.stringify({ keys: grpcCallersOf(server).map((caller) => keys[caller]!.publicJwk) });
    return [
      'apiVersion: apps/v1',
      'kind: Deployment',
      'metadata:',
      `  name: halo-${server}`,
      'spec:',
      '  template:',
      '    spec:',
      '      containers:',
      `        - name: ${server}`,
      '          env:',
      '            - name: SERVICE_TRUSTED_KEYS',
      `              value: '${trusted}'`,
    ].join('\n');
  });
  writeFileSync(resolve(dir, 'trusted-keys.yaml'), `# Made by \`npm run local-secrets\`; never commit it.\n${patches.join('\n---\n')}\n`);
}

if (require.main === module) {
  localSecrets(DIR);
  process.stdout.write(`Wrote ${DIR}/secrets.env and ${DIR}/trusted-keys.yaml (fresh keys; git-ignored).\n`);
}
