import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { ServiceKeyPair } from '@halo/kit/launch';

/**
 * The developer's credential for the registry in the embedded mode (docs/registry.md,
 * "Authentication"): `npm start` makes a fresh developer key at every start, has its registry
 * trust it, and leaves the private half here, readable by its user only, for `npm run subgraph`
 * of the same checkout. A dev default: the registry accepts a developer token only when
 * HALO_ENV=development, and the file is removed when Halo stops.
 */
const ROOT = resolve(__dirname, '../..');
/** The issuer and key-id prefix of a developer token (the registry's `DEVELOPER`). */
export const DEVELOPER = 'developer';

/** Where npm start leaves the developer key for the registry listening on `port`. */
export const devCredentialsFile = (port: number, root = ROOT) => resolve(root, '.data', 'dev-credentials', `registry-${port}.json`);

export function writeDevCredentials(port: number, key: ServiceKeyPair, root = ROOT): void {
  const file = devCredentialsFile(port, root);
  mkdirSync(resolve(file, '..'), { recursive: true, mode: 0o700 });
  writeFileSync(file, JSON.stringify({ note: 'npm start: a dev-only key, made at start and removed at stop', key: key.privateJwk }), {
    mode: 0o600,
  });
  // An existing file keeps its mode through writeFileSync: make sure.
  chmodSync(file, 0o600);
}

export const removeDevCredentials = (port: number, root = ROOT) => rmSync(devCredentialsFile(port, root), { force: true });

const LOOPBACK_HOST = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/;

/**
 * A single-use developer token for the registry at `registryUrl`, when it is this checkout's npm
 * start (a loopback address with a key left for its port); otherwise undefined.
 */
export async function developerToken(registryUrl: string, root = ROOT): Promise<string | undefined> {
  let url: URL;
  try {
    url = new URL(registryUrl);
  } catch {
    return undefined;
  }
  if (!LOOPBACK_HOST.test(url.hostname)) return undefined;
  let key: ServiceKeyPair['privateJwk'];
  try {
    key = (JSON.parse(readFileSync(devCredentialsFile(Number(url.port || 80), root), 'utf8')) as { key: ServiceKeyPair['privateJwk'] }).key;
  } catch {
    return undefined;
  }
  // Loaded here only: the launcher writes the file without loading the rest of the kit.
  const { ServiceIdentity } = await import('@halo/kit/auth');
  return new ServiceIdentity(DEVELOPER, { signingKey: key }).singleUseToken('registry');
}
