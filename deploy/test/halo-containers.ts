import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { generateServiceKey } from '@halo/kit/launch';
import { buildRenderer, CHART, SERVICE_CHART, type Renderer } from '../../helm/test/render';
import { Cluster } from '../../tools/src/containers/cluster';
import type { K8sObject } from '../../tools/src/containers/k8s';
import { imageExists, podman, podmanMissing } from '../../tools/src/containers/podman';

/**
 * Halo as a platform team installs it, on one machine: helm/halo rendered with ci/containers.yaml
 * and catalog's own release (helm/halo-service with ci/catalog-containers.yaml), both with the
 * secrets of this run, started by the runner (tools/src/containers/cluster.ts) against PostgreSQL
 * (TLS, with a CA of this run that the pods verify) and Redis containers. The gateway's Service is
 * published on the host's loopback, as an Ingress or a load balancer would expose it.
 */
export const NAMESPACE = 'halo';
export const COMPONENTS = ['gateway', 'auth', 'content', 'catalog', 'payments', 'chat', 'registry'] as const;
const PLATFORM_VALUES = join(CHART, 'ci/containers.yaml');
const CATALOG_VALUES = join(SERVICE_CHART, 'ci/catalog-containers.yaml');

/** Whether this file's tests run, and the one line to print when they do not. */
export function containerTestsSkipped(): string | undefined {
  const required = process.env.HALO_REQUIRE_CONTAINER_TESTS === '1';
  if (!required && process.env.HALO_CONTAINER_TESTS !== '1') {
    return 'skipped: npm run images && npm run test:containers run it (podman)';
  }
  const missing = podmanMissing();
  if (missing && required) throw new Error(`${missing}; HALO_REQUIRE_CONTAINER_TESTS=1 needs it`);
  if (missing) return `skipped: ${missing}`;
  return undefined;
}

export interface Secrets {
  jwtSecret: string;
  adminPassword: string;
  passwords: Record<string, string>;
  keys: Record<string, ReturnType<typeof generateServiceKey>>;
}

function makeSecrets(): Secrets {
  const hex = () => randomBytes(24).toString('hex');
  const keys = Object.fromEntries(COMPONENTS.map((c) => [c, generateServiceKey(c, `containers-${Date.now()}`)]));
  return {
    jwtSecret: randomBytes(48).toString('base64url'),
    adminPassword: hex(),
    passwords: Object.fromEntries(COMPONENTS.filter((c) => c !== 'gateway').map((c) => [c, hex()])),
    keys,
  };
}

/** The values this run adds over the committed files: every secret, fresh. */
function runValues(secrets: Secrets, tag: string, tlsQuery: string) {
  const platform = {
    image: { tag },
    postgres: { passwords: secrets.passwords },
    provisionRoles: { adminUrl: `postgres://postgres:${secrets.adminPassword}@postgres:5432/postgres${tlsQuery}` },
    secrets: {
      jwtSecret: secrets.jwtSecret,
      serviceSigningKeys: Object.fromEntries(
        Object.entries(secrets.keys)
          .filter(([c]) => c !== 'catalog')
          .map(([c, k]) => [c, JSON.stringify(k.privateJwk)]),
      ),
    },
    serviceIdentity: { publicKeys: Object.fromEntries(Object.entries(secrets.keys).map(([c, k]) => [c, [k.publicJwk]])) },
  };
  const catalog = (catalogTag: string) => ({
    image: { tag: catalogTag },
    database: { password: secrets.passwords.catalog },
    secrets: { serviceSigningKey: JSON.stringify(secrets.keys.catalog!.privateJwk) },
  });
  return { platform, catalog };
}

/** A CA of this run and the PostgreSQL server's certificate (CN and SAN `postgres`), by openssl. */
function makeTls(dir: string): { caCert: string; serverDir: string } {
  const serverDir = join(dir, 'pg-tls');
  mkdirSync(serverDir, { recursive: true });
  const run = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  run([
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=halo-containers-ca',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
  ]);
  run([
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-subj',
    '/CN=postgres',
    '-keyout',
    join(serverDir, 'server.key'),
    '-out',
    'server.csr',
  ]);
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=DNS:postgres\n');
  run([
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    'san.ext',
    '-out',
    join(serverDir, 'server.crt'),
  ]);
  execFileSync('chmod', ['-R', 'a+rX', serverDir]);
  return { caCert: execFileSync('cat', [join(dir, 'ca.crt')], { encoding: 'utf8' }), serverDir };
}

export interface RunningHalo {
  cluster: Cluster;
  /** The gateway's Service on the host's loopback. */
  url: string;
  secrets: Secrets;
  /** Renders catalog's release again with another image tag (its upgrade). */
  catalogRelease(tag: string): K8sObject[];
  /** Runs SQL as PostgreSQL's superuser inside its container. */
  psql(sql: string): Promise<string>;
  /** When each Deployment's first pod became ready, ms after its container was created. */
  startToReady: Record<string, number>;
  stop(): Promise<void>;
}

export async function startHalo(opts: {
  tag: string;
  proxyImage: string;
  postgresImage: string;
  redisImage: string;
  gatewayPort: number;
}): Promise<RunningHalo> {
  for (const c of COMPONENTS) {
    const image = `localhost/halo/${c}:${opts.tag}`;
    if (!(await imageExists(image))) throw new Error(`${image} is not built: run npm run images first`);
  }
  const work = mkdtempSync(join(tmpdir(), 'halo-containers-'));
  const renderer: Renderer = buildRenderer();
  const secrets = makeSecrets();
  const tls = makeTls(work);
  const tlsQuery = '?sslmode=verify-full&sslrootcert=/etc/halo/postgres-ca/ca.crt';
  const values = runValues(secrets, opts.tag, tlsQuery);
  const platformFile = join(work, 'platform.yaml');
  writeFileSync(platformFile, stringify(values.platform));
  const render = (chart: string, release: string, files: string[]) => {
    const out = spawnSync(
      renderer.bin,
      ['--chart', chart, '--release-name', release, '--namespace', NAMESPACE, ...files.flatMap((f) => ['-f', f])],
      {
        encoding: 'utf8',
      },
    );
    if (out.status !== 0) throw new Error(`rendering ${chart} failed: ${out.stderr}`);
    return parseAllDocuments(out.stdout)
      .map((d) => d.toJS() as K8sObject | null)
      .filter((o): o is K8sObject => o !== null);
  };
  const catalogRelease = (tag: string) => {
    const file = join(work, `catalog-${tag}.yaml`);
    writeFileSync(file, stringify(values.catalog(tag)));
    return render(SERVICE_CHART, 'halo-catalog', [CATALOG_VALUES, file]);
  };
  const platform = render(CHART, 'halo', [PLATFORM_VALUES, platformFile]);
  const catalog = catalogRelease(opts.tag);

  const name = `halo-ct-${randomBytes(3).toString('hex')}`;
  const cluster = new Cluster({
    name,
    namespace: NAMESPACE,
    workDir: join(work, 'cluster'),
    proxyImage: opts.proxyImage,
    publish: { 'halo-gateway': opts.gatewayPort },
  });
  const stop = async () => {
    await cluster.down();
    renderer.dispose();
    rmSync(work, { recursive: true, force: true });
  };
  try {
    await cluster.up();
    // The managed database and Redis a platform team would point the chart at.
    const postgres = await cluster.runExternal('postgres', opts.postgresImage, {
      aliases: ['postgres'],
      env: { POSTGRES_PASSWORD: secrets.adminPassword },
      mounts: [`${tls.serverDir}:/etc/halo/pg-tls:ro`],
    });
    await cluster.runExternal('redis', opts.redisImage, { aliases: ['redis'] });
    const psql = async (sql: string) =>
      (await podman(['exec', '-u', 'postgres', postgres, 'psql', '-d', 'halo', '-v', 'ON_ERROR_STOP=1', '-tAc', sql], {})).stdout.trim();
    await waitFor(
      'PostgreSQL',
      async () => (await podman(['exec', '-u', 'postgres', postgres, 'pg_isready', '-q'], { allowFailure: true })).code === 0,
      60_000,
    );
    // The database CA, as a platform team creates it beside the release (kubectl create configmap).
    cluster.applyObject({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'halo-postgres-ca' }, data: { 'ca.crt': tls.caCert } });
    await cluster.install(platform);
    await cluster.install(catalog);
    return {
      cluster,
      url: `http://127.0.0.1:${opts.gatewayPort}`,
      secrets,
      catalogRelease,
      psql,
      startToReady: cluster.startToReady,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function waitFor(what: string, ok: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
