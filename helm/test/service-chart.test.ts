import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Ajv from 'ajv';
import { parse } from 'yaml';
import { EDGE_SERVICE_NAMES, GRPC_CALLS, grpcCallersOf, SERVICES, type ServiceName } from '@halo/kit/launch';
import { validateK8sObjects, type K8sObject } from './k8s-schemas';
import {
  buildRenderer,
  CHART,
  render,
  renderError,
  renderText,
  rendererTests,
  SERVICE_CHART,
  secretsReadBy,
  type Rendered,
  type Renderer,
} from './render';

// Every test here needs the renderer (Go + Debian's libraries): skipped with one line without them.
const { describe, it, beforeAll } = rendererTests('helm/halo-service chart tests');

/**
 * helm/halo-service, one release per service, rendered alone for each `ci/<service>.yaml` as
 * `helm template halo-<service> helm/halo-service -f ci/<service>.yaml` would: values against
 * its schema, objects against the Kubernetes schemas, the committed examples; then beside the
 * platform release (helm/halo/ci/platform-values.yaml): no object of one release is another's.
 */
const CI_DIR = join(SERVICE_CHART, 'ci');
const EXAMPLES_DIR = join(SERVICE_CHART, 'examples');
const ciFiles = readdirSync(CI_DIR)
  .filter((f) => f.endsWith('.yaml'))
  .sort();
/** The service a ci file releases: its name up to the first dash (catalog-containers.yaml: catalog). */
const serviceOf = (f: string) => f.replace(/\.yaml$/, '').split('-')[0]!;
const releaseOf = (f: string) => `halo-${serviceOf(f)}`;

type Obj = K8sObject & { metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> } };
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: Record<string, { name: string; key: string; optional?: boolean }>;
}
interface PodTemplate {
  metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
  spec: {
    containers: {
      image: string;
      env?: EnvVar[];
      securityContext?: unknown;
      livenessProbe?: unknown;
      readinessProbe?: unknown;
      startupProbe?: unknown;
    }[];
    securityContext?: unknown;
    automountServiceAccountToken?: boolean;
  };
}
const objectsOf = (r: Rendered) => r.objects as Obj[];
const all = (r: Rendered, kind: string) => objectsOf(r).filter((o) => o.kind === kind);
function one(r: Rendered, kind: string, name: string): Obj {
  const found = objectsOf(r).find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name}`);
  return found;
}
const podTemplate = (o: Obj) => (o.spec as { template: PodTemplate }).template;
const env = (o: Obj) => Object.fromEntries((podTemplate(o).spec.containers[0]!.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]));
const hookOf = (o: Obj) => o.metadata.annotations?.['helm.sh/hook'];

let renderer: Renderer;
const renders = new Map<string, Rendered>();
let platform: Rendered;
const rendered = (f: string) => renders.get(f)!;

beforeAll(() => {
  renderer = buildRenderer();
  for (const f of ciFiles) renders.set(f, render(renderer, [join(CI_DIR, f)], { chart: SERVICE_CHART, release: releaseOf(f) }));
  platform = render(renderer, [join(CHART, 'ci/platform-values.yaml')]);
}, 180_000);
afterAll(() => renderer?.dispose());

const schema = JSON.parse(readFileSync(join(SERVICE_CHART, 'values.schema.json'), 'utf8')) as object;
const validateValues = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true }).compile(schema);
const chartValues = parse(readFileSync(join(SERVICE_CHART, 'values.yaml'), 'utf8')) as {
  topology: Record<string, { httpPort?: number; grpcPort?: number; calls?: string[] }>;
};

describe('values', () => {
  it("the chart's topology is packages/kit/src/config/topology.ts (ports and gRPC calls)", () => {
    for (const [name, ports] of Object.entries(SERVICES)) {
      const t = chartValues.topology[name]!;
      expect({ name, httpPort: t.httpPort, grpcPort: t.grpcPort, calls: t.calls ?? [] }).toEqual({
        name,
        ...ports,
        calls: [...GRPC_CALLS[name as ServiceName]],
      });
    }
    expect(chartValues.topology.gateway!.calls).toEqual([...GRPC_CALLS.gateway]);
  });

  it.each(ciFiles)('the merged values of ci/%s validate against values.schema.json', (f) => {
    expect(validateValues(rendered(f).values) ? [] : validateValues.errors).toEqual([]);
  });

  // What cannot run is refused before anything reaches the cluster. (`any`: each case edits a
  // different path of the merged values, which have no static type here.)
  const refusals: [string, (v: Record<string, any>) => void, string][] = [
    ['no service', (v) => delete v.service, ''],
    [
      'no image registry or repository (it would pull halo/<service> from Docker Hub)',
      (v) => (v.image = { ...v.image, registry: '', repository: '' }),
      '/image',
    ],
    [
      'a database without a password, URL or existing Secret',
      (v) => (v.database = { enabled: true, password: '', url: '' }),
      '/database/password',
    ],
    [
      'publishing without a signing key or existing Secret',
      (v) => (v.secrets = { existingSecret: '', serviceSigningKey: '' }),
      '/secrets/serviceSigningKey',
    ],
    [
      'a public key where the private one belongs',
      (v) => (v.secrets.serviceSigningKey = '{"kty":"OKP","x":"abc"}'),
      '/secrets/serviceSigningKey',
    ],
    ['a misspelt key', (v) => (v.replcas = 3), ''],
  ];
  it.each(refusals)('the schema refuses %s', (_, change, path) => {
    const bad = structuredClone(rendered('catalog.yaml').values) as Record<string, any>;
    change(bad);
    expect(validateValues(bad)).toBe(false);
    expect(validateValues.errors!.map((e) => e.instancePath)).toContain(path);
  });

  it('the renderer refuses them too, as `helm install` would', () => {
    const dir = mkdtempSync(join(tmpdir(), 'halo-service-values-'));
    try {
      const file = join(dir, 'no-registry.yaml');
      writeFileSync(file, 'image:\n  registry: ""\n');
      const error = renderError(renderer, [join(CI_DIR, 'catalog.yaml'), file], { chart: SERVICE_CHART, release: 'halo-catalog' });
      expect(error).toContain("values don't meet the specifications of the schema");
      writeFileSync(file, 'database:\n  password: ""\n');
      expect(renderError(renderer, [join(CI_DIR, 'catalog.yaml'), file], { chart: SERVICE_CHART, release: 'halo-catalog' })).toContain(
        'database',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.each(ciFiles)('ci/%s', (f) => {
  const r = () => rendered(f);
  const service = serviceOf(f);

  it('renders alone objects that validate against the Kubernetes schemas, with no unknown field', () => {
    expect(validateK8sObjects(r().objects)).toEqual([]);
    expect(all(r(), 'Deployment').map((d) => d.metadata.name)).toEqual([`${service === 'chat' ? 'halo-prod' : 'halo'}-${service}`]);
  });

  it('matches the committed example (examples/' + f + ')', () => {
    const text = renderText(renderer, [join(CI_DIR, f)], { chart: SERVICE_CHART, release: releaseOf(f) });
    const file = join(EXAMPLES_DIR, f);
    if (process.env.UPDATE_EXAMPLES) writeFileSync(file, text);
    expect(text).toBe(readFileSync(file, 'utf8'));
  });

  it("labels every object with its own release, and its pods with the platform's installation", () => {
    for (const o of objectsOf(r())) {
      expect({ object: `${o.kind}/${o.metadata.name}`, instance: o.metadata.labels?.['app.kubernetes.io/instance'] }).toEqual({
        object: `${o.kind}/${o.metadata.name}`,
        instance: releaseOf(f),
      });
    }
    const d = one(r(), 'Deployment', all(r(), 'Deployment')[0]!.metadata.name);
    expect(podTemplate(d).metadata.labels['app.kubernetes.io/part-of']).toBe(service === 'chat' ? 'halo-prod' : 'halo');
  });

  it('runs non-root, read-only, with no capabilities, probed like the platform chart probes a service', () => {
    for (const o of [...all(r(), 'Deployment'), ...all(r(), 'Job').filter((j) => !j.metadata.name.endsWith('-hook-cleanup'))]) {
      const pod = podTemplate(o).spec;
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } });
      expect(pod.automountServiceAccountToken).toBe(false);
      expect(pod.containers[0]!.securityContext).toEqual({
        runAsNonRoot: true,
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
    }
    const c = podTemplate(all(r(), 'Deployment')[0]!).spec.containers[0]!;
    expect(c.startupProbe).toMatchObject({ httpGet: { path: '/healthz', port: 'http' } });
    expect(c.readinessProbe).toMatchObject({ httpGet: { path: '/readyz', port: 'http' } });
    expect(c.livenessProbe).toMatchObject({ grpc: { port: SERVICES[service as ServiceName].grpcPort } });
  });

  it('serves gRPC on 0.0.0.0 (GRPC_HOST) and reads the JWT secret from the platform', () => {
    const e = env(all(r(), 'Deployment')[0]!);
    expect(e.GRPC_HOST).toBe('0.0.0.0');
    expect(e.GRPC_PORT).toBe(String(SERVICES[service as ServiceName].grpcPort));
    expect(e.JWT_SECRET).toEqual({ secretKeyRef: { name: service === 'chat' ? 'halo-prod-managed' : 'halo', key: 'jwt-secret' } });
  });

  it('publishes its contract in a post-install/post-upgrade hook, after the pods, with its own key and cluster URL', () => {
    const job = one(r(), 'Job', `${all(r(), 'Deployment')[0]!.metadata.name}-publish`);
    expect(job.metadata.annotations).toEqual({
      'helm.sh/hook': 'post-install,post-upgrade',
      'helm.sh/hook-weight': '0',
      'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded',
    });
    const e = env(job);
    const platformName = service === 'chat' ? 'halo-prod' : 'halo';
    expect(e).toMatchObject({
      HALO_PUBLISH_CONTRACT_ONLY: 'true',
      REGISTRY_URL: { configMapKeyRef: { name: `${platformName}-topology`, key: 'registry-url' } },
      SERVICE_PUBLIC_URL: `http://${platformName}-${service}.halo.svc:${SERVICES[service as ServiceName].httpPort}`,
      SERVICE_SIGNING_KEY: { secretKeyRef: { name: service === 'chat' ? 'halo-chat-managed' : `halo-${service}`, key: 'signing-key' } },
    });
    // Least privilege: the one secret its pod reads is its signing key; no database, JWT, Redis or peers.
    expect(secretsReadBy(e)).toEqual(['signing-key']);
    expect(Object.keys(e).filter((k) => /^(DATABASE_|REDIS_URL|JWT_SECRET|SERVICE_TRUSTED_KEYS)|_GRPC_ADDR$/.test(k))).toEqual([]);
    expect(env(all(r(), 'Deployment')[0]!).JWT_SECRET).toBeDefined(); // while the service itself keeps them
    // Its pod joins no Service and is admitted by the registry's policy as <service>-publish.
    expect(podTemplate(job).metadata.labels['app.kubernetes.io/component']).toBe(`${service}-publish`);
    expect(podTemplate(job).metadata.labels).not.toHaveProperty('helm.sh/chart');
  });

  it('migrates its own database only, in a pre-install/pre-upgrade hook', () => {
    const migrations = all(r(), 'Job').filter((j) => hookOf(j)?.includes('pre-upgrade'));
    expect(migrations.map((j) => j.metadata.name)).toEqual([`${all(r(), 'Deployment')[0]!.metadata.name}-migrate`]);
    expect(env(migrations[0]!).HALO_MIGRATE_ONLY).toBe('true');
  });
});

describe('catalog (ci/catalog.yaml)', () => {
  const r = () => rendered('catalog.yaml');

  it("admits the gateway on HTTP, its topology's gRPC callers (payments) on gRPC and the scraper on /metrics", () => {
    type Peer = { podSelector?: { matchLabels: Record<string, string> }; namespaceSelector?: unknown };
    const spec = one(r(), 'NetworkPolicy', 'halo-catalog').spec as { ingress: { from: Peer[]; ports: { port: string }[] }[] };
    const rules = spec.ingress.map((rule) => ({
      ports: rule.ports.map((p) => p.port),
      from: rule.from.map((p) => p.podSelector?.matchLabels['app.kubernetes.io/component'] ?? 'scraper'),
    }));
    expect(rules).toEqual([
      { ports: ['http'], from: ['gateway'] },
      { ports: ['grpc'], from: grpcCallersOf('catalog') },
      { ports: ['http'], from: ['scraper'] },
    ]);
    // Across releases: the peers are matched by installation and component, not by release.
    expect(spec.ingress[1]!.from[0]!.podSelector!.matchLabels).toEqual({
      'app.kubernetes.io/name': 'halo',
      'app.kubernetes.io/part-of': 'halo',
      'app.kubernetes.io/component': 'payments',
    });
  });

  it("builds DATABASE_URL in the pod from its password and the platform's PostgreSQL address", () => {
    const e = env(one(r(), 'Deployment', 'halo-catalog'));
    expect(e).toMatchObject({
      DATABASE_ADDRESS: { configMapKeyRef: { name: 'halo-topology', key: 'postgres-address' } },
      DATABASE_PASSWORD: { secretKeyRef: { name: 'halo-catalog', key: 'database-password' } },
      DATABASE_QUERY: { configMapKeyRef: { name: 'halo-topology', key: 'postgres-query' } },
      DATABASE_URL: 'postgres://catalog:$(DATABASE_PASSWORD)@$(DATABASE_ADDRESS)$(DATABASE_QUERY)',
      SERVICE_TRUSTED_KEYS: { configMapKeyRef: { name: 'halo-topology', key: 'catalog.trusted-keys', optional: true } },
    });
    // Kubernetes expands $(VAR) only for variables defined before it in the list.
    const names = podTemplate(one(r(), 'Deployment', 'halo-catalog')).spec.containers[0]!.env!.map((v) => v.name);
    for (const v of ['DATABASE_ADDRESS', 'DATABASE_PASSWORD', 'DATABASE_QUERY'])
      expect(names.indexOf(v)).toBeLessThan(names.indexOf('DATABASE_URL'));
    // Every topology key the service reads is one the platform's ConfigMap has.
    const topology = one(platform, 'ConfigMap', 'halo-topology').data as Record<string, string>;
    const keys = JSON.stringify(objectsOf(r()))
      .match(/"configMapKeyRef":\{[^}]*\}/g)!
      .map((ref) => (JSON.parse(ref.slice('"configMapKeyRef":'.length)) as { key: string }).key);
    for (const key of new Set(keys)) expect({ key, inPlatform: key in topology }).toEqual({ key, inPlatform: true });
  });
});

describe('content, with every extension point (ci/content.yaml)', () => {
  const r = () => rendered('content.yaml');
  type Spec = {
    initContainers?: { name: string }[];
    containers: { name: string; envFrom?: unknown[]; volumeMounts?: { name: string; mountPath: string }[] }[];
    volumes: { name: string }[];
    topologySpreadConstraints?: { topologyKey: string; labelSelector: { matchLabels: Record<string, string> } }[];
  };
  const spec = (o: Obj) => (o.spec as { template: { spec: Spec } }).template.spec;

  it('carries them like the platform chart: envFrom and the CA mount on the pods and both hook Jobs, init and sidecar containers on the Deployment only', () => {
    const d = spec(one(r(), 'Deployment', 'halo-content'));
    expect(d.initContainers!.map((c) => c.name)).toEqual(['warm-cache']);
    expect(d.containers.map((c) => c.name)).toEqual(['content', 'log-shipper']);
    expect(d.topologySpreadConstraints!.map((t) => [t.topologyKey, t.labelSelector.matchLabels['app.kubernetes.io/component']])).toEqual([
      ['kubernetes.io/hostname', 'content'],
      ['topology.kubernetes.io/zone', 'content'],
    ]);
    for (const o of [
      one(r(), 'Deployment', 'halo-content'),
      one(r(), 'Job', 'halo-content-migrate'),
      one(r(), 'Job', 'halo-content-publish'),
    ]) {
      const s = spec(o);
      expect(s.containers[0]!.envFrom).toEqual([{ configMapRef: { name: 'content-site-env' } }]);
      expect(s.containers[0]!.volumeMounts).toContainEqual({ name: 'postgres-ca', mountPath: '/etc/halo/postgres-ca', readOnly: true });
      expect(s.volumes).toContainEqual({ name: 'postgres-ca', secret: { secretName: 'postgres-ca' } });
      if (o.kind === 'Job') expect([s.containers.length, s.initContainers]).toEqual([1, undefined]);
    }
    const service = one(r(), 'Service', 'halo-content');
    expect((service.spec as { type: string }).type).toBe('LoadBalancer');
    expect(service.metadata.annotations).toEqual({ 'networking.gke.io/load-balancer-type': 'Internal' });
  });
});

describe("catalog's hook Secret (ci/catalog.yaml)", () => {
  it('is deleted on success, on failure and on uninstall (a post-delete Job allowed to delete only it)', () => {
    const r = rendered('catalog.yaml');
    expect(one(r, 'Secret', 'halo-catalog-hooks').metadata.annotations!['helm.sh/hook-delete-policy']).toBe(
      'before-hook-creation,hook-succeeded,hook-failed',
    );
    const cleanup = objectsOf(r)
      .filter((o) => hookOf(o) === 'post-delete')
      .map((o) => `${o.kind}/${o.metadata.name}`);
    expect(cleanup).toEqual([
      'ServiceAccount/halo-catalog-hook-cleanup',
      'Role/halo-catalog-hook-cleanup',
      'RoleBinding/halo-catalog-hook-cleanup',
      'Job/halo-catalog-hook-cleanup',
    ]);
    expect(one(r, 'Role', 'halo-catalog-hook-cleanup').rules).toEqual([
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['halo-catalog-hooks'], verbs: ['delete'] },
    ]);
    expect(env(one(r, 'Job', 'halo-catalog-hook-cleanup'))).toMatchObject({ SECRET: 'halo-catalog-hooks', NAMESPACE: 'halo' });
  });
});

describe('payments (ci/payments.yaml)', () => {
  it("reaches catalog through the platform's topology, and Redis through its Secret", () => {
    const e = env(one(rendered('payments.yaml'), 'Deployment', 'halo-payments'));
    expect(e).toMatchObject({
      CATALOG_GRPC_ADDR: { configMapKeyRef: { name: 'halo-topology', key: 'catalog.grpc-addr' } },
      // payments cannot run without Redis: the key is not optional.
      REDIS_URL: { secretKeyRef: { name: 'halo', key: 'redis-url' } },
      DATABASE_URL: { secretKeyRef: { name: 'halo-payments', key: 'database-url' } },
    });
    expect((one(platform, 'ConfigMap', 'halo-topology').data as Record<string, string>)['catalog.grpc-addr']).toBe('halo-catalog:5003');
  });
});

describe('releases side by side: the platform (helm/halo/ci/platform-values.yaml), catalog and payments', () => {
  it("share no object: upgrading catalog's release touches nothing of another release", () => {
    const releases = { halo: platform, 'halo-catalog': rendered('catalog.yaml'), 'halo-payments': rendered('payments.yaml') };
    const owner = new Map<string, string>();
    for (const [release, r] of Object.entries(releases)) {
      for (const o of objectsOf(r)) {
        const id = `${o.kind}/${o.metadata.name}`;
        expect({ id, alsoIn: owner.get(id) }).toEqual({ id, alsoIn: undefined });
        owner.set(id, release);
        expect({ id, instance: o.metadata.labels?.['app.kubernetes.io/instance'] }).toEqual({ id, instance: release });
      }
    }
    // Only catalog's migration Job runs when catalog is released.
    expect(
      all(rendered('catalog.yaml'), 'Job')
        .filter((j) => j.metadata.name.endsWith('-migrate'))
        .map((j) => j.metadata.name),
    ).toEqual(['halo-catalog-migrate']);
  });

  it('the platform renders the gateway and registry only, and keeps every service in the topology and the gateway', () => {
    expect(all(platform, 'Deployment').map((d) => d.metadata.name)).toEqual(['halo-gateway', 'halo-registry']);
    expect(all(platform, 'Job').map((j) => j.metadata.name)).toEqual(['halo-registry-migrate', 'halo-hook-cleanup']);
    const topology = one(platform, 'ConfigMap', 'halo-topology').data as Record<string, string>;
    for (const [name, ports] of Object.entries(SERVICES)) {
      expect(topology[`${name}.grpc-addr`]).toBe(`halo-${name}:${ports.grpcPort}`);
      expect(JSON.parse(topology[`${name}.public-keys`]!)).toMatchObject({ keys: [{ kid: `${name}:ci-2026-01` }] });
    }
    expect(topology['registry-url']).toBe('http://halo-registry:4006');
    expect(topology['postgres-address']).toBe('postgres.db.svc.cluster.local:5432/halo');
    const kids = (key: string) => (JSON.parse(topology[key]!) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
    expect(kids('catalog.trusted-keys')).toEqual(['payments:ci-2026-01']);
    expect(kids('auth.trusted-keys')).toEqual(['gateway:ci-2026-01', 'registry:ci-2026-01']);
    const gateway = env(one(platform, 'Deployment', 'halo-gateway'));
    expect(gateway).toMatchObject({
      CATALOG_URL: 'http://halo-catalog:4003',
      REGISTRY_URL: 'http://halo-registry:4006',
      SUPERGRAPH_PATH: '/etc/halo/composed/supergraph.graphql',
    });
    // The catalog Service the gateway calls is the one catalog's release creates.
    expect(one(rendered('catalog.yaml'), 'Service', 'halo-catalog')).toBeDefined();
    // The registry admits every service's publish hook, whichever release runs it.
    const registryPeers = JSON.stringify(one(platform, 'NetworkPolicy', 'halo-registry').spec);
    for (const name of EDGE_SERVICE_NAMES) expect(registryPeers).toContain(`"app.kubernetes.io/component":"${name}-publish"`);
  });

  it('the registry gets its database, its keys and every caller trusted', () => {
    const e = env(one(platform, 'Deployment', 'halo-registry'));
    expect(e).toMatchObject({
      HTTP_PORT: '4006',
      GRPC_HOST: '0.0.0.0',
      GRPC_PORT: '5006',
      AUTH_GRPC_ADDR: 'halo-auth:5001',
      DATABASE_URL: { secretKeyRef: { name: 'halo', key: 'registry-database-url' } },
      SERVICE_SIGNING_KEY: { secretKeyRef: { name: 'halo', key: 'registry-signing-key' } },
      REGISTRY_USAGE_WINDOW_DAYS: '7',
      REGISTRY_USAGE_RETENTION_DAYS: '30',
    });
    const trusted = (JSON.parse(e.SERVICE_TRUSTED_KEYS as string) as { keys: { kid: string }[] }).keys.map((k) => k.kid.split(':')[0]);
    expect(trusted).toEqual(['auth', 'catalog', 'chat', 'content', 'gateway', 'payments']);
  });
});

describe('chart versions', () => {
  it('a chart version bump rolls no pod: pod templates carry nothing chart-versioned', () => {
    const dir = mkdtempSync(join(tmpdir(), 'halo-chart-bump-'));
    try {
      for (const [chart, values, release] of [
        [CHART, join(CHART, 'ci/default-values.yaml'), 'halo'],
        [SERVICE_CHART, join(CI_DIR, 'catalog.yaml'), 'halo-catalog'],
      ] as const) {
        const copy = join(dir, release);
        cpSync(chart, copy, { recursive: true });
        const meta = join(copy, 'Chart.yaml');
        writeFileSync(meta, readFileSync(meta, 'utf8').replace(/^version: .*$/m, 'version: 9.9.9'));
        const pods = (r: Rendered) =>
          (r.objects as Obj[]).filter((o) => ['Deployment', 'Job'].includes(o.kind)).map((o) => [o.metadata.name, podTemplate(o)]);
        const before = render(renderer, [values], { chart, release });
        const after = render(renderer, [values], { chart: copy, release });
        expect(after.manifest).not.toBe(before.manifest); // the objects' helm.sh/chart label did change
        expect(pods(after)).toEqual(pods(before));
        expect(JSON.stringify(pods(before))).not.toContain('helm.sh/chart');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
