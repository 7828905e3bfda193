import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Ajv from 'ajv';
import { parse as parsePgUrl } from 'pg-connection-string';
import { parse, stringify } from 'yaml';
import { GATEWAY_METRICS_PORT, GATEWAY_PORT, GRPC_CALLS, SERVICES } from '@halo/kit/launch';
import { validateK8sObjects, type K8sObject } from './k8s-schemas';
import {
  buildRenderer,
  rendererTests,
  CHART,
  render,
  renderError,
  renderText,
  ROOT,
  secretsReadBy,
  type Rendered,
  type Renderer,
} from './render';

// Every test here needs the renderer (Go + Debian's libraries): skipped with one line without them.
const { describe, it, beforeAll } = rendererTests('helm/halo chart tests');
/**
 * helm/halo, rendered here the way `helm template` renders it (helm/render: our stand-in for
 * `helm template`, Go's text/template + sprig), for every CI value set: the values validate against
 * values.schema.json, every object validates against the Kubernetes schemas (strictly: no unknown
 * field), the committed examples match, and the chart does what helm/halo/README.md promises.
 * `UPDATE_EXAMPLES=1 npx jest helm` rewrites helm/halo/examples/ after a deliberate change.
 */
const CI_DIR = join(CHART, 'ci');
const EXAMPLES_DIR = join(CHART, 'examples');
const ciFiles = readdirSync(CI_DIR)
  .filter((f) => f.endsWith('.yaml'))
  .sort();
const ci = (name: string) => join(CI_DIR, name);

let renderer: Renderer;
const renders = new Map<string, Rendered>();

beforeAll(() => {
  renderer = buildRenderer();
  for (const f of ciFiles) renders.set(f, render(renderer, [ci(f)]));
}, 120_000);
afterAll(() => renderer?.dispose());

const rendered = (f: string) => renders.get(f)!;

/**
 * Values files over ci/default-values.yaml, written to a directory of the calling describe block
 * (made before its tests, removed after): `over(name, yaml)` gives the files to render;
 * `over(name, yaml, 'alone')` the one file without the defaults under it.
 */
function overDefaults(prefix: string): (name: string, yaml: string, alone?: 'alone') => string[] {
  let dir = '';
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), prefix));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return (name, yaml, alone) => {
    const file = join(dir, `${name}.yaml`);
    writeFileSync(file, yaml);
    return alone ? [file] : [ci('default-values.yaml'), file];
  };
}

type Obj = K8sObject & { metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> } };
const objectsOf = (r: Rendered) => r.objects as Obj[];
const all = (r: Rendered, kind: string) => objectsOf(r).filter((o) => o.kind === kind);
function one(r: Rendered, kind: string, name: string): Obj {
  const found = objectsOf(r).find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name}`);
  return found;
}

// Enough of the pod shapes to read them; the schemas have validated the rest.
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } } & Record<string, unknown>;
}
interface Container {
  name: string;
  image: string;
  env?: EnvVar[];
  command?: string[];
  ports?: { name: string; containerPort: number }[];
  securityContext?: Record<string, unknown>;
  livenessProbe?: Record<string, unknown>;
  readinessProbe?: Record<string, unknown>;
  startupProbe?: Record<string, unknown>;
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface PodSpec {
  containers: Container[];
  securityContext?: Record<string, unknown>;
  automountServiceAccountToken?: boolean;
  serviceAccountName?: string;
  volumes?: { name: string; configMap?: { name: string } }[];
}
interface PodTemplate {
  metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
  spec: PodSpec;
}
/** A NetworkPolicy's ingress rules, each as its ports and peers (a component, or a namespace and pods). */
function rulesOf(policy: Obj): { ports: string[]; from: string[] }[] {
  type Selector = { matchLabels?: Record<string, string> };
  const spec = policy.spec as {
    ingress: { from: { podSelector?: Selector; namespaceSelector?: Selector }[]; ports: { port: string }[] }[];
  };
  const labels = (s: Selector | undefined) =>
    Object.entries(s?.matchLabels ?? {})
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
  return spec.ingress.map((rule) => ({
    ports: rule.ports.map((p) => p.port),
    from: rule.from.map((peer) => {
      if (!peer.namespaceSelector) return peer.podSelector?.matchLabels?.['app.kubernetes.io/component'] ?? '?';
      const ns = `namespace ${peer.namespaceSelector.matchLabels?.['kubernetes.io/metadata.name'] ?? labels(peer.namespaceSelector)}`;
      return peer.podSelector ? `${ns}, pods ${labels(peer.podSelector)}` : ns;
    }),
  }));
}
const podTemplate = (o: Obj) => (o.spec as { template: PodTemplate }).template;
/** The chart's PgBouncer (pgbouncer.enabled): not a Halo process, so no /healthz, /readyz or /metrics. */
const isPgbouncer = (o: Obj) => o.metadata.labels?.['app.kubernetes.io/component'] === 'pgbouncer';
const container = (o: Obj) => podTemplate(o).spec.containers[0]!;
const env = (c: Container) => Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]));
const secretData = (s: Obj) =>
  Object.fromEntries(Object.entries(s.data as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));

const values = parse(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as {
  components: Record<string, { httpPort: number; grpcPort?: number; metricsPort?: number; calls?: string[]; enabled: boolean }>;
};
const schema = JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')) as object;
const validateValues = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true }).compile(schema);

describe('values', () => {
  it('values.yaml validates against values.schema.json', () => {
    expect(validateValues(values) ? [] : validateValues.errors).toEqual([]);
  });

  it.each(ciFiles)('the merged values of ci/%s validate against values.schema.json', (f) => {
    expect(validateValues(rendered(f).values) ? [] : validateValues.errors).toEqual([]);
  });

  it('the schema refuses a misspelt key, a number for an env value, a short JWT secret and a private key among the public ones', () => {
    const bad = structuredClone(rendered('default-values.yaml').values) as {
      components: Record<string, Record<string, unknown>>;
      secrets: { jwtSecret: string };
      serviceIdentity: { publicKeys: Record<string, Record<string, string>[]> };
    };
    bad.components.auth!.replcas = 3;
    bad.components.auth!.env = { LOG_LEVEL: 3 };
    bad.secrets.jwtSecret = 'short';
    bad.serviceIdentity.publicKeys.gateway![0]!.d = 'private-part';
    expect(validateValues(bad)).toBe(false);
    const paths = validateValues.errors!.map((e) => e.instancePath);
    expect(paths).toEqual(
      expect.arrayContaining([
        '/components/auth',
        '/components/auth/env/LOG_LEVEL',
        '/secrets/jwtSecret',
        '/serviceIdentity/publicKeys/gateway/0/d',
      ]),
    );
  });

  it("is refused by the renderer too, as `helm install` refuses values that break the chart's schema", () => {
    const error = renderError(renderer, [ci('default-values.yaml'), join(__dirname, 'fixtures/misspelt-values.yaml')]);
    expect(error).toContain("values don't meet the specifications of the schema");
    expect(error).toContain('components.auth: Property name of "replcas" does not match');
  });

  it('names, ports and gRPC edges follow packages/kit/src/config/topology.ts', () => {
    expect(values.components.gateway!.httpPort).toBe(GATEWAY_PORT);
    expect(values.components.gateway!.metricsPort).toBe(GATEWAY_METRICS_PORT);
    expect(values.components.gateway!.calls).toEqual([...GRPC_CALLS.gateway]);
    for (const [name, ports] of Object.entries(SERVICES)) {
      const c = values.components[name]!;
      expect({ name, httpPort: c.httpPort, grpcPort: c.grpcPort, calls: c.calls ?? [] }).toEqual({
        name,
        ...ports,
        calls: [...GRPC_CALLS[name as keyof typeof SERVICES]],
      });
      expect(c.enabled).toBe(true);
    }
  });
});

describe.each(ciFiles)('ci/%s', (f) => {
  it('renders objects that validate against the Kubernetes schemas, with no unknown field', () => {
    const objects = rendered(f).objects;
    expect(objects.length).toBeGreaterThan(5);
    expect(validateK8sObjects(objects)).toEqual([]);
  });

  it('matches the committed example (examples/' + f + ')', () => {
    const text = renderText(renderer, [ci(f)]);
    const file = join(EXAMPLES_DIR, f);
    if (process.env.UPDATE_EXAMPLES) writeFileSync(file, text);
    expect(text).toBe(readFileSync(file, 'utf8'));
  });

  it('gives every secretKeyRef to a Secret the chart renders a key that Secret holds', () => {
    // A pod whose non-optional key is missing never starts (CreateContainerConfigError). Secrets
    // the chart does not render (an existing one, another release's) are the installer's.
    const secrets = new Map(all(rendered(f), 'Secret').map((s) => [s.metadata.name, Object.keys(s.data ?? {})]));
    const missing: string[] = [];
    for (const object of [...all(rendered(f), 'Deployment'), ...all(rendered(f), 'Job')]) {
      for (const c of podTemplate(object).spec.containers) {
        for (const e of (c.env ?? []) as {
          name: string;
          valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
        }[]) {
          const ref = e.valueFrom?.secretKeyRef;
          const keys = ref && secrets.get(ref.name);
          if (ref && keys && !ref.optional && !keys.includes(ref.key))
            missing.push(`${object.metadata.name}: ${e.name} → ${ref.name}/${ref.key}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('runs every container as non-root with a read-only root filesystem and no capabilities', () => {
    // The uninstall cleanup (below) is the one pod with a service-account token.
    const pods = [
      ...all(rendered(f), 'Deployment').map((d) => podTemplate(d).spec),
      ...all(rendered(f), 'Job')
        .filter((j) => !j.metadata.name.endsWith('-hook-cleanup'))
        .map((j) => podTemplate(j).spec),
      ...(all(rendered(f), 'Pod').map((p) => p.spec) as PodSpec[]),
    ];
    expect(pods.length).toBeGreaterThan(0);
    for (const pod of pods) {
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } });
      expect(pod.automountServiceAccountToken).toBe(false);
      for (const c of pod.containers) {
        expect(c.securityContext).toEqual({
          runAsNonRoot: true,
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        });
      }
    }
  });

  it('probes /healthz and /readyz over HTTP, and gRPC servers over grpc.health.v1', () => {
    for (const d of all(rendered(f), 'Deployment').filter((o) => !isPgbouncer(o))) {
      const c = container(d);
      const grpc = c.ports?.find((p) => p.name === 'grpc');
      expect(c.readinessProbe).toMatchObject({ httpGet: { path: '/readyz', port: 'http' } });
      expect(c.startupProbe).toMatchObject({ httpGet: { path: '/healthz', port: 'http' } });
      expect(c.livenessProbe).toMatchObject(
        grpc ? { grpc: { port: grpc.containerPort } } : { httpGet: { path: '/healthz', port: 'http' } },
      );
    }
  });

  it('gives pre-install hooks only what exists before the release: earlier hooks or your own objects', () => {
    const hookOf = (o: Obj) => o.metadata.annotations?.['helm.sh/hook'];
    const weight = (o: Obj) => Number(o.metadata.annotations?.['helm.sh/hook-weight'] ?? 0);
    const released = new Set(
      objectsOf(rendered(f))
        .filter((o) => !hookOf(o))
        .map((o) => `${o.kind}/${o.metadata.name}`),
    );
    const hooks = objectsOf(rendered(f)).filter((o) => hookOf(o)?.includes('pre-install'));
    for (const job of hooks.filter((o) => o.kind === 'Job')) {
      const pod = podTemplate(job).spec;
      const needs = [
        `ServiceAccount/${pod.serviceAccountName ?? 'default'}`,
        ...JSON.stringify(pod)
          .match(/"secretKeyRef":\{[^}]*\}/g)!
          .map((ref) => `Secret/${(JSON.parse(ref.slice('"secretKeyRef":'.length)) as { name: string }).name}`),
        ...(pod.volumes ?? []).flatMap((v) => (v.configMap ? [`ConfigMap/${v.configMap.name}`] : [])),
      ];
      for (const need of needs) {
        expect({ job: job.metadata.name, need, createdByTheReleaseAfterwards: released.has(need) }).toMatchObject({
          createdByTheReleaseAfterwards: false,
        });
        const earlierHook = hooks.find((h) => `${h.kind}/${h.metadata.name}` === need);
        if (earlierHook) expect(weight(earlierHook)).toBeLessThan(weight(job));
      }
    }
  });

  it('keeps hook and test pods out of every Service and PodDisruptionBudget', () => {
    const selectors = [...all(rendered(f), 'Service'), ...all(rendered(f), 'PodDisruptionBudget')].map((o) => {
      const spec = o.spec as { selector: Record<string, string> & { matchLabels?: Record<string, string> } };
      return spec.selector.matchLabels ?? spec.selector;
    });
    const hookPods = [
      ...all(rendered(f), 'Job').map((j) => podTemplate(j).metadata.labels),
      ...all(rendered(f), 'Pod').map((p) => p.metadata.labels!),
    ];
    for (const labels of hookPods) {
      for (const selector of selectors) {
        expect(Object.entries(selector).every(([k, v]) => labels[k] === v)).toBe(false);
      }
    }
  });
});

describe('the default install (ci/default-values.yaml)', () => {
  const r = () => rendered('default-values.yaml');

  it('runs the gateway, the registry and the five services, two replicas each, images tagged with the appVersion', () => {
    const deployments = all(r(), 'Deployment').map((d) => [d.metadata.name, (d.spec as { replicas: number }).replicas, container(d).image]);
    expect(deployments).toEqual([
      ['halo-auth', 2, 'registry.example.com/halo/auth:0.1.0'],
      ['halo-catalog', 2, 'registry.example.com/halo/catalog:0.1.0'],
      ['halo-chat', 2, 'registry.example.com/halo/chat:0.1.0'],
      ['halo-content', 2, 'registry.example.com/halo/content:0.1.0'],
      ['halo-gateway', 2, 'registry.example.com/halo/gateway:0.1.0'],
      ['halo-payments', 2, 'registry.example.com/halo/payments:0.1.0'],
      ['halo-registry', 2, 'registry.example.com/halo/registry:0.1.0'],
    ]);
  });

  it('wires each process to its peers by Service name, with the JWT secret and its database URL from the Secret', () => {
    const gateway = env(container(one(r(), 'Deployment', 'halo-gateway')));
    expect(gateway).toMatchObject({
      HTTP_PORT: '4000',
      AUTH_URL: 'http://halo-auth:4001',
      CONTENT_URL: 'http://halo-content:4002',
      CATALOG_URL: 'http://halo-catalog:4003',
      AUTH_GRPC_ADDR: 'halo-auth:5001',
      SUPERGRAPH_PATH: '/etc/halo/composed/supergraph.graphql',
      ROUTES_PATH: '/etc/halo/composed/routes.json',
      OPENAPI_PATH: '/etc/halo/composed/openapi.json',
      JWT_SECRET: { secretKeyRef: { name: 'halo', key: 'jwt-secret' } },
      SERVICE_SIGNING_KEY: { secretKeyRef: { name: 'halo', key: 'gateway-signing-key' } },
      HALO_ENV: 'production',
    });
    expect(gateway).not.toHaveProperty('DATABASE_URL');
    const auth = env(container(one(r(), 'Deployment', 'halo-auth')));
    expect(auth).toMatchObject({
      HTTP_PORT: '4001',
      GRPC_PORT: '5001',
      CONTENT_GRPC_ADDR: 'halo-content:5002',
      DATABASE_URL: { secretKeyRef: { name: 'halo', key: 'auth-database-url' } },
      REDIS_URL: { secretKeyRef: { name: 'halo', key: 'redis-url', optional: true } },
      COOKIE_SECURE: 'true',
    });
    const secret = secretData(one(r(), 'Secret', 'halo'));
    expect(secret['auth-database-url']).toBe(
      'postgres://auth:3f1b2c9d8e7a6b5c4d3e2f1a0b9c8d7e@postgres.db.svc.cluster.local:5432/halo?sslmode=require',
    );
    expect(Object.keys(secret).sort()).toEqual([
      'auth-database-password',
      'auth-database-url',
      'auth-signing-key',
      'catalog-database-password',
      'catalog-database-url',
      'catalog-signing-key',
      'chat-database-password',
      'chat-database-url',
      'chat-signing-key',
      'content-database-password',
      'content-database-url',
      'content-signing-key',
      'gateway-signing-key',
      'jwt-secret',
      'payments-database-password',
      'payments-database-url',
      'payments-signing-key',
      'redis-url',
      'registry-database-password',
      'registry-database-url',
      'registry-signing-key',
    ]);
  });

  it('has every gRPC server listen on all interfaces (GRPC_HOST=0.0.0.0): its peers call it from other pods', () => {
    const grpcServers = all(r(), 'Deployment').filter((d) => env(container(d)).GRPC_PORT !== undefined);
    expect(grpcServers.map((d) => d.metadata.name)).toEqual([
      'halo-auth',
      'halo-catalog',
      'halo-chat',
      'halo-content',
      'halo-payments',
      'halo-registry',
    ]);
    for (const d of grpcServers) expect([d.metadata.name, env(container(d)).GRPC_HOST]).toEqual([d.metadata.name, '0.0.0.0']);
    expect(env(container(one(r(), 'Deployment', 'halo-gateway')))).not.toHaveProperty('GRPC_HOST');
  });

  it("gives each gRPC server exactly its callers' public keys", () => {
    const trusted = (name: string) => {
      const value = env(container(one(r(), 'Deployment', name))).SERVICE_TRUSTED_KEYS as string | undefined;
      return value === undefined ? undefined : (JSON.parse(value) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
    };
    // auth: the gateway, and the registry (exchanging CI's API keys).
    expect(trusted('halo-auth')).toEqual(['gateway:ci-2026-01', 'registry:ci-2026-01']);
    expect(trusted('halo-content')).toEqual(['auth:ci-2026-01', 'chat:ci-2026-01']);
    expect(trusted('halo-catalog')).toEqual(['payments:ci-2026-01']);
    expect(trusted('halo-payments')).toBeUndefined();
    expect(trusted('halo-chat')).toBeUndefined();
    expect(trusted('halo-gateway')).toBeUndefined();
    // The registry: every process that publishes to it or polls it.
    expect(trusted('halo-registry')).toEqual(['auth', 'catalog', 'chat', 'content', 'gateway', 'payments'].map((c) => `${c}:ci-2026-01`));
  });

  it('admits the ingress controller only to the gateway, the gateway to HTTP, gRPC only from callers, the scraper only to /metrics', () => {
    const rules = (name: string) => rulesOf(one(r(), 'NetworkPolicy', name));
    // The ingress controller reaches the gateway's public port, the scraper its metrics port only.
    expect(rules('halo-gateway')).toEqual([
      { ports: ['http'], from: ['namespace ingress-nginx', 'test'] },
      { ports: ['metrics'], from: ['namespace monitoring'] },
    ]);
    expect(rules('halo-auth')).toEqual([
      { ports: ['http'], from: ['gateway'] },
      { ports: ['grpc'], from: ['gateway', 'registry'] },
      { ports: ['http'], from: ['namespace monitoring'] },
    ]);
    expect(rules('halo-content')).toEqual([
      { ports: ['http'], from: ['gateway'] },
      { ports: ['grpc'], from: ['auth', 'chat'] },
      { ports: ['http'], from: ['namespace monitoring'] },
    ]);
    expect(rules('halo-catalog')).toEqual([
      { ports: ['http'], from: ['gateway'] },
      { ports: ['grpc'], from: ['payments'] },
      { ports: ['http'], from: ['namespace monitoring'] },
    ]);
    // chat is called by no one over gRPC: HTTP (subgraph and WebSocket) from the gateway only.
    expect(rules('halo-chat')).toEqual([
      { ports: ['http'], from: ['gateway'] },
      { ports: ['http'], from: ['namespace monitoring'] },
    ]);
    // The registry: the gateway's polls and usage reports, each service's publish hook.
    expect(rules('halo-registry')).toEqual([
      { ports: ['http'], from: ['gateway', 'auth-publish', 'catalog-publish', 'chat-publish', 'content-publish', 'payments-publish'] },
      { ports: ['http'], from: ['namespace monitoring'] },
    ]);
    // Peers are selected by component and installation (part-of), not release: a peer may be in
    // its own release (helm/halo-service).
    const gatewayPeer = (
      one(r(), 'NetworkPolicy', 'halo-catalog').spec as { ingress: { from: { podSelector: { matchLabels: Record<string, string> } }[] }[] }
    ).ingress[0]!.from[0]!;
    expect(gatewayPeer.podSelector.matchLabels).toEqual({
      'app.kubernetes.io/name': 'halo',
      'app.kubernetes.io/part-of': 'halo',
      'app.kubernetes.io/component': 'gateway',
    });
  });

  it("serves every process's /metrics where a scraper finds it: the gateway's on its own `metrics` port, never through the Ingress's `http`", () => {
    const gateway = one(r(), 'Deployment', 'halo-gateway');
    expect(container(gateway).ports).toEqual([
      { name: 'http', containerPort: 4000, protocol: 'TCP' },
      { name: 'metrics', containerPort: 9464, protocol: 'TCP' },
    ]);
    expect(env(container(gateway)).METRICS_PORT).toBe('9464');
    const service = one(r(), 'Service', 'halo-gateway').spec as { ports: { name: string; port: number; targetPort: string }[] };
    expect(service.ports.map((p) => [p.name, p.port, p.targetPort])).toEqual([
      ['http', 4000, 'http'],
      ['metrics', 9464, 'metrics'],
    ]);
    for (const d of all(r(), 'Deployment')) {
      const port = d.metadata.name === 'halo-gateway' ? '9464' : String(container(d).ports!.find((p) => p.name === 'http')!.containerPort);
      expect(podTemplate(d).metadata.annotations).toMatchObject({
        'prometheus.io/scrape': 'true',
        'prometheus.io/port': port,
        'prometheus.io/path': '/metrics',
      });
      if (d.metadata.name !== 'halo-gateway') expect(env(container(d))).not.toHaveProperty('METRICS_PORT');
    }
    // ServiceMonitors are opt-in (they need the Prometheus Operator's CRDs).
    expect(all(r(), 'ServiceMonitor')).toEqual([]);
  });

  it('gives chat its database, Redis (the pub/sub of its subscriptions, required) and content as its one gRPC peer', () => {
    const chat = env(container(one(r(), 'Deployment', 'halo-chat')));
    expect(chat).toMatchObject({
      HTTP_PORT: '4005',
      GRPC_PORT: '5005',
      DATABASE_URL: { secretKeyRef: { name: 'halo', key: 'chat-database-url' } },
      // Required, not optional: without the key kubelet refuses to start the container, naming it.
      REDIS_URL: { secretKeyRef: { name: 'halo', key: 'redis-url' } },
    });
    expect(Object.keys(chat).filter((k) => k.endsWith('_GRPC_ADDR'))).toEqual(['CONTENT_GRPC_ADDR']);
    expect(env(container(one(r(), 'Deployment', 'halo-gateway'))).CHAT_URL).toBe('http://halo-chat:4005');
  });

  it('migrates each database service in a pre-install/pre-upgrade Job reading the hook copy of the Secret', () => {
    const jobs = all(r(), 'Job').filter((j) => j.metadata.name.endsWith('-migrate'));
    expect(jobs.map((j) => j.metadata.name)).toEqual([
      'halo-auth-migrate',
      'halo-catalog-migrate',
      'halo-chat-migrate',
      'halo-content-migrate',
      'halo-payments-migrate',
      'halo-registry-migrate',
    ]);
    for (const job of jobs) {
      expect(job.metadata.annotations).toEqual({
        'helm.sh/hook': 'pre-install,pre-upgrade',
        'helm.sh/hook-weight': '0',
        'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded',
      });
      const e = env(container(job));
      expect(e.HALO_MIGRATE_ONLY).toBe('true');
      expect(e.DATABASE_URL).toEqual({ secretKeyRef: { name: 'halo-hooks', key: `${job.metadata.name.split('-')[1]}-database-url` } });
    }
    const hookSecret = one(r(), 'Secret', 'halo-hooks');
    expect(hookSecret.metadata.annotations).toMatchObject({ 'helm.sh/hook': 'pre-install,pre-upgrade', 'helm.sh/hook-weight': '-10' });
    expect(hookSecret.data).toEqual(one(r(), 'Secret', 'halo').data);
  });

  it('binds every gRPC server to 0.0.0.0 (GRPC_HOST), points the gateway at the registry, and publishes each service after its pods', () => {
    for (const d of all(r(), 'Deployment')) {
      const e = env(container(d));
      expect({ name: d.metadata.name, GRPC_HOST: e.GRPC_HOST }).toEqual({
        name: d.metadata.name,
        GRPC_HOST: e.GRPC_PORT ? '0.0.0.0' : undefined,
      });
    }
    expect(env(container(one(r(), 'Deployment', 'halo-gateway'))).REGISTRY_URL).toBe('http://halo-registry:4006');
    const publish = all(r(), 'Job').filter((j) => j.metadata.name.endsWith('-publish'));
    expect(publish.map((j) => j.metadata.name)).toEqual([
      'halo-auth-publish',
      'halo-catalog-publish',
      'halo-chat-publish',
      'halo-content-publish',
      'halo-payments-publish',
    ]);
    for (const job of publish) {
      expect(job.metadata.annotations).toMatchObject({ 'helm.sh/hook': 'post-install,post-upgrade', 'helm.sh/hook-weight': '0' });
      const service = job.metadata.name.split('-')[1]!;
      expect(env(container(job))).toMatchObject({
        HALO_PUBLISH_CONTRACT_ONLY: 'true',
        REGISTRY_URL: 'http://halo-registry:4006',
        SERVICE_PUBLIC_URL: `http://halo-${service}.halo.svc:${values.components[service]!.httpPort}`,
        SERVICE_SIGNING_KEY: { secretKeyRef: { name: 'halo', key: `${service}-signing-key` } },
      });
      // Least privilege: the one secret its pod reads is its signing key; no database, JWT, Redis or peers.
      expect(secretsReadBy(env(container(job)))).toEqual([`${service}-signing-key`]);
      expect(
        Object.keys(env(container(job))).filter((k) => /^(DATABASE_|REDIS_URL|JWT_SECRET|SERVICE_TRUSTED_KEYS)|_GRPC_ADDR$/.test(k)),
      ).toEqual([]);
    }
  });

  it("serves the gateway's composed files (supergraph, route table, OpenAPI) from a ConfigMap, equal to the committed gateway/ files", () => {
    const composed = one(r(), 'ConfigMap', 'halo-composed');
    for (const file of ['supergraph.graphql', 'routes.json', 'openapi.json']) {
      expect((composed.data as Record<string, string>)[file]).toBe(readFileSync(join(ROOT, 'gateway', file), 'utf8'));
    }
    expect(podTemplate(one(r(), 'Deployment', 'halo-gateway')).spec.volumes).toContainEqual({
      name: 'composed',
      configMap: { name: 'halo-composed' },
    });
    // Hot-reloaded, so no checksum of it on the pods: only the Secret's (beside the scrape annotations).
    expect(
      Object.keys(podTemplate(one(r(), 'Deployment', 'halo-gateway')).metadata.annotations!).filter((k) => k.startsWith('checksum/')),
    ).toEqual(['checksum/secret']);
  });

  it('has a helm test pod that calls the gateway /readyz through its Service', () => {
    const pod = one(r(), 'Pod', 'halo-test-readyz');
    expect(pod.metadata.annotations!['helm.sh/hook']).toBe('test');
    const c = (pod.spec as PodSpec).containers[0]!;
    expect(c.image).toBe('registry.example.com/halo/gateway:0.1.0');
    expect(c.command!.at(-1)).toBe('http://halo-gateway:4000/readyz');
  });

  it('prints NOTES with every component and how to reach the gateway', () => {
    expect(r().notes).toContain('gateway   registry.example.com/halo/gateway:0.1.0');
    expect(r().notes).toContain('kubectl -n halo port-forward svc/halo-gateway 4000:4000');
    expect(r().notes).toContain('helm test halo -n halo');
  });

  it('renders nothing without a JWT secret, as `helm install` would refuse it', () => {
    expect(renderError(renderer, [])).toContain('secrets.jwtSecret is required');
  });
});

describe('the full install (ci/full-values.yaml)', () => {
  const r = () => rendered('full-values.yaml');

  it('releases one service on its own image tag', () => {
    const images = Object.fromEntries(all(r(), 'Deployment').map((d) => [d.metadata.name, container(d).image]));
    expect(images).toEqual({
      'halo-auth': 'registry.example.com/acme/halo/auth:0.1.0',
      'halo-catalog': 'registry.example.com/acme/halo/catalog:0.1.0',
      'halo-chat': 'registry.example.com/acme/halo/chat:0.1.0',
      'halo-content': 'registry.example.com/acme/halo/content:0.1.1',
      'halo-gateway': 'registry.example.com/acme/halo/gateway:0.1.0',
      'halo-payments': 'registry.example.com/acme/halo/payments:0.1.0',
      'halo-pgbouncer': 'edoburu/pgbouncer:v1.25.1-p0',
      'halo-registry': 'registry.example.com/acme/halo/registry:0.1.0',
    });
    expect(one(r(), 'Deployment', 'halo-content').metadata.labels!['app.kubernetes.io/version']).toBe('0.1.1');
    expect(container(one(r(), 'Job', 'halo-content-migrate')).image).toBe('registry.example.com/acme/halo/content:0.1.1');
  });

  it('merges env maps: one key overridden everywhere, one removed from one component, the rest kept', () => {
    const auth = env(container(one(r(), 'Deployment', 'halo-auth')));
    const content = env(container(one(r(), 'Deployment', 'halo-content')));
    expect(auth.LOG_LEVEL).toBe('warn');
    expect(content.LOG_LEVEL).toBe('warn');
    expect(auth).not.toHaveProperty('SHUTDOWN_TIMEOUT_MS');
    expect(content.SHUTDOWN_TIMEOUT_MS).toBe('10000');
    expect(auth).toMatchObject({ HALO_ENV: 'production', ACCESS_TOKEN_TTL: '15m' });
    expect(auth.OAUTH_GOOGLE_CLIENT_SECRET).toEqual({ secretKeyRef: { name: 'halo-oauth', key: 'google-client-secret' } });
  });

  it('gives the gateway and auth the one browser-origin list (corsOrigins → CORS_ORIGINS), and no other component', () => {
    const list = 'https://app.halo.example.com,https://*.preview.halo.example.com';
    expect(env(container(one(r(), 'Deployment', 'halo-gateway'))).CORS_ORIGINS).toBe(list);
    expect(env(container(one(r(), 'Deployment', 'halo-auth'))).CORS_ORIGINS).toBe(list);
    expect(env(container(one(r(), 'Deployment', 'halo-content')))).not.toHaveProperty('CORS_ORIGINS');
  });

  it('has a ServiceMonitor per component on the port /metrics is on, with the interval, timeout and labels asked for', () => {
    const monitors = all(r(), 'ServiceMonitor');
    expect(monitors.map((m) => m.metadata.name)).toEqual(
      all(r(), 'Deployment')
        .filter((d) => !isPgbouncer(d))
        .map((d) => d.metadata.name),
    );
    for (const m of monitors) {
      const spec = m.spec as { selector: { matchLabels: Record<string, string> }; endpoints: Record<string, string>[] };
      // It selects exactly its component's Service (by the Services' labels), and names a port that Service has.
      const selects = (o: Obj) => Object.entries(spec.selector.matchLabels).every(([k, v]) => o.metadata.labels?.[k] === v);
      expect(
        all(r(), 'Service')
          .filter(selects)
          .map((o) => o.metadata.name),
      ).toEqual([m.metadata.name]);
      const service = one(r(), 'Service', m.metadata.name);
      expect(m.metadata.labels).toMatchObject({
        release: 'kube-prometheus-stack',
        'app.kubernetes.io/component': m.metadata.name.slice('halo-'.length),
      });
      const port = m.metadata.name === 'halo-gateway' ? 'metrics' : 'http';
      expect(spec.endpoints).toEqual([{ port, path: '/metrics', scheme: 'http', interval: '15s', scrapeTimeout: '10s' }]);
      expect((service.spec as { ports: { name: string }[] }).ports.map((p) => p.name)).toContain(port);
    }
  });

  it("holds the ServiceMonitors to the Prometheus Operator's own schema (a CRD): a misspelt field or a wrong value is refused", () => {
    const changed = (change: (endpoint: Record<string, unknown>) => void) => {
      const monitor = structuredClone(one(r(), 'ServiceMonitor', 'halo-gateway'));
      change((monitor.spec as { endpoints: Record<string, unknown>[] }).endpoints[0]!);
      return validateK8sObjects([monitor]);
    };
    expect(changed(() => undefined)).toEqual([]);
    expect(changed((e) => (e.intervall = '15s')).join('\n')).toContain('\'"intervall"\' does not exist');
    expect(changed((e) => (e.interval = 'soon')).join('\n')).toContain('interval must match pattern');
  });

  it("admits the configured scraper to /metrics' port only", () => {
    const scraper = rulesOf(one(r(), 'NetworkPolicy', 'halo-gateway')).at(-1);
    expect(scraper).toEqual({ ports: ['metrics'], from: ['namespace observability, pods app.kubernetes.io/name=prometheus'] });
    // chat's own extra rule stays beside it.
    expect(rulesOf(one(r(), 'NetworkPolicy', 'halo-chat')).slice(1)).toEqual([
      { ports: ['http'], from: ['namespace observability, pods app.kubernetes.io/name=prometheus'] },
      { ports: ['http'], from: ['namespace monitoring'] },
    ]);
  });

  it("routes the Ingress to the gateway Service only (the other Ingress is the registry's Studio, below)", () => {
    expect(all(r(), 'Ingress').map((i) => i.metadata.name)).toEqual(['halo', 'halo-registry-studio']);
    const backends = JSON.stringify(one(r(), 'Ingress', 'halo').spec).match(/"service":\{[^}]*\}/g);
    expect(backends).toEqual(['"service":{"name":"halo-gateway","port":{"name":"http"}']);
  });

  it('lets payments (and only payments) call catalog over gRPC, with its key trusted', () => {
    const catalog = one(r(), 'NetworkPolicy', 'halo-catalog').spec as {
      ingress: { from: { podSelector: { matchLabels: Record<string, string> } }[]; ports: { port: string }[] }[];
    };
    const grpcRule = catalog.ingress.find((rule) => rule.ports.some((p) => p.port === 'grpc'))!;
    expect(grpcRule.from.map((p) => p.podSelector.matchLabels['app.kubernetes.io/component'])).toEqual(['payments']);
    expect(env(container(one(r(), 'Deployment', 'halo-payments'))).CATALOG_GRPC_ADDR).toBe('halo-catalog:5003');
    const trusted = JSON.parse(env(container(one(r(), 'Deployment', 'halo-catalog'))).SERVICE_TRUSTED_KEYS as string) as {
      keys: { kid: string }[];
    };
    expect(trusted.keys.map((k) => k.kid)).toEqual(['payments:ci-2026-01']);
    // Mid-rotation, content trusts both of auth's keys.
    const content = JSON.parse(env(container(one(r(), 'Deployment', 'halo-content'))).SERVICE_TRUSTED_KEYS as string) as {
      keys: { kid: string }[];
    };
    expect(content.keys.map((k) => k.kid)).toEqual(['auth:ci-2026-01', 'auth:ci-2026-02', 'chat:ci-2026-01']);
  });

  it('scales with HPAs where enabled (and then leaves replicas to them)', () => {
    expect(all(r(), 'HorizontalPodAutoscaler').map((h) => [h.metadata.name, (h.spec as { minReplicas: number }).minReplicas])).toEqual([
      ['halo-catalog', 4],
      ['halo-gateway', 3],
    ]);
    expect(one(r(), 'Deployment', 'halo-gateway').spec).not.toHaveProperty('replicas');
    expect((one(r(), 'Deployment', 'halo-auth').spec as { replicas: number }).replicas).toBe(2);
  });

  it('provisions roles before migrating, both before the release', () => {
    const hooks = objectsOf(r())
      .filter((o) => o.metadata.annotations?.['helm.sh/hook']?.includes('pre-install'))
      .map((o) => [o.kind, o.metadata.name, Number(o.metadata.annotations!['helm.sh/hook-weight'])] as const)
      .sort((a, b) => a[2] - b[2]);
    expect(hooks.slice(0, 2)).toEqual([
      ['Secret', 'halo-hooks', -10],
      ['Job', 'halo-provision-roles', -5],
    ]);
    const provision = env(container(one(r(), 'Job', 'halo-provision-roles')));
    expect(provision).toMatchObject({
      ADMIN_DATABASE_URL: { secretKeyRef: { name: 'halo-hooks', key: 'provision-admin-url' } },
      HALO_DATABASE: 'halo_prod',
      HALO_SERVICES: 'auth,catalog,chat,content,payments,registry',
      PAYMENTS_DB_PASSWORD: { secretKeyRef: { name: 'halo-hooks', key: 'payments-database-password' } },
    });
    expect(container(one(r(), 'Job', 'halo-provision-roles')).command).toEqual(['node', '/app/tools/dist/provision-roles.js']);
    const secret = secretData(one(r(), 'Secret', 'halo'));
    expect(secret['catalog-database-url']).toContain('@pgbouncer.example.internal:6432/');
    // The pods' URL goes through the chart's PgBouncer (below); the migration Job's is direct.
    expect(secret['payments-database-migration-url']).toBe(
      'postgres://payments:5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b@pg.example.internal:6432/halo_prod?sslmode=verify-full',
    );
  });

  it("marks the components' pods for the mesh when grpc.tls is enabled, not the hook Jobs (a sidecar would keep them running)", () => {
    for (const d of all(r(), 'Deployment')) {
      expect(podTemplate(d).metadata.annotations).toMatchObject({ 'linkerd.io/inject': 'enabled' });
    }
    for (const j of all(r(), 'Job')) expect(podTemplate(j).metadata.annotations).toBeUndefined();
  });
});

describe('an existing Secret (ci/existing-secret-values.yaml)', () => {
  const r = () => rendered('existing-secret-values.yaml');

  it('creates no Secret and reads every secret from the named one', () => {
    expect(all(r(), 'Secret')).toEqual([]);
    const refs = all(r(), 'Deployment').flatMap((d) =>
      (container(d).env ?? []).flatMap((e) => (e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef.name] : [])),
    );
    expect(refs.length).toBeGreaterThan(8);
    expect(new Set(refs)).toEqual(new Set(['halo-managed']));
  });

  it('renders no NetworkPolicy, migration Job, PodDisruptionBudget or test pod when they are switched off', () => {
    expect(
      objectsOf(r())
        .map((o) => o.kind)
        .filter((k) => ['NetworkPolicy', 'PodDisruptionBudget', 'Pod', 'ServiceAccount'].includes(k)),
    ).toEqual([]);
    // Only the contract-publish hooks (post-install/post-upgrade) remain.
    expect(all(r(), 'Job').filter((j) => !j.metadata.name.endsWith('-publish'))).toEqual([]);
    for (const d of all(r(), 'Deployment')) expect(podTemplate(d).spec.serviceAccountName).toBe('halo-workloads');
  });
});

describe('the install npm run test:containers runs (ci/containers.yaml)', () => {
  it('mounts the private database CA in the role-provisioning Job too (it connects with sslmode=verify-full)', () => {
    const job = one(rendered('containers.yaml'), 'Job', 'halo-provision-roles');
    const spec = podTemplate(job).spec;
    expect(spec.containers[0]!.volumeMounts).toContainEqual({ name: 'postgres-ca', mountPath: '/etc/halo/postgres-ca', readOnly: true });
    expect(spec.volumes).toContainEqual({ name: 'postgres-ca', configMap: { name: 'halo-postgres-ca' } });
  });
});

describe('refusals', () => {
  it('a component that calls a disabled one', () => {
    expect(renderError(renderer, [ci('default-values.yaml'), join(__dirname, 'fixtures/payments-without-catalog.yaml')])).toContain(
      'components.payments calls catalog, which is not an enabled component',
    );
  });

  it("a gRPC server whose caller's public key is missing", () => {
    expect(renderError(renderer, [join(__dirname, 'fixtures/missing-public-key.yaml')])).toContain(
      'serviceIdentity.publicKeys.payments is required: payments calls catalog over gRPC',
    );
  });
});

describe('every extension point (ci/extensions-values.yaml)', () => {
  const r = () => rendered('extensions-values.yaml');
  type Spread = { topologyKey: string; whenUnsatisfiable: string; labelSelector: { matchLabels: Record<string, string> } };
  type FullPod = PodSpec & {
    initContainers?: Container[];
    topologySpreadConstraints?: Spread[];
    volumes?: { name: string; configMap?: { name: string }; secret?: { secretName: string } }[];
  };
  type FullContainer = Container & { envFrom?: Record<string, { name: string }>[] };
  const pod = (o: Obj) => podTemplate(o).spec as FullPod;
  const main = (o: Obj) => pod(o).containers[0] as FullContainer;
  const caMount = { name: 'postgres-ca', mountPath: '/etc/halo/postgres-ca', readOnly: true };

  it('gives every component the defaults (envFrom, the CA mount, zone spread over its own pods) unless its own list replaces them', () => {
    for (const d of all(r(), 'Deployment')) {
      const name = d.metadata.name;
      const envFrom = main(d).envFrom!.map((e) => Object.values(e)[0]!.name);
      expect({ name, envFrom }).toEqual({
        name,
        envFrom: name === 'halo-gateway' ? ['halo-site-env', 'halo-gateway-extra'] : ['halo-site-env'],
      });
      const mounts = main(d).volumeMounts!.map((m) => m.name);
      expect({ name, ca: mounts.includes('postgres-ca') }).toEqual({ name, ca: name !== 'halo-gateway' });
      // The chart's `env` is still rendered beside envFrom (and wins over it in Kubernetes).
      expect(env(main(d)).HALO_ENV).toBe('production');
      const component = podTemplate(d).metadata.labels['app.kubernetes.io/component'];
      const spread = pod(d).topologySpreadConstraints!.map((t) => [
        t.topologyKey,
        t.whenUnsatisfiable,
        t.labelSelector.matchLabels['app.kubernetes.io/component'],
      ]);
      expect(spread).toEqual([
        ['kubernetes.io/hostname', 'ScheduleAnyway', component],
        ['topology.kubernetes.io/zone', name === 'halo-gateway' ? 'DoNotSchedule' : 'ScheduleAnyway', component],
      ]);
    }
  });

  it('adds init and sidecar containers to the Deployments only, never to a hook Job (a sidecar would keep it running)', () => {
    const gateway = pod(one(r(), 'Deployment', 'halo-gateway'));
    expect(gateway.containers.map((c) => c.name)).toEqual(['gateway', 'otel-agent']);
    expect(gateway.volumes!.map((v) => v.name)).toEqual(['tmp', 'composed', 'otel-config']);
    expect(pod(one(r(), 'Deployment', 'halo-catalog')).initContainers!.map((c) => c.name)).toEqual(['wait-for-pooler']);
    for (const job of all(r(), 'Job')) {
      expect({ job: job.metadata.name, containers: pod(job).containers.length, init: pod(job).initContainers }).toEqual({
        job: job.metadata.name,
        containers: 1,
        init: undefined,
      });
    }
  });

  it("sets the Services' type and annotations (a component's map merged over the defaults')", () => {
    const gateway = one(r(), 'Service', 'halo-gateway');
    expect((gateway.spec as { type: string }).type).toBe('LoadBalancer');
    expect(gateway.metadata.annotations).toEqual({
      'example.com/owner': 'platform-team',
      'service.beta.kubernetes.io/aws-load-balancer-type': 'external',
      'service.beta.kubernetes.io/aws-load-balancer-nlb-target-type': 'ip',
      'service.beta.kubernetes.io/aws-load-balancer-scheme': 'internet-facing',
    });
    const catalog = one(r(), 'Service', 'halo-catalog');
    expect((catalog.spec as { type: string }).type).toBe('ClusterIP');
    expect(catalog.metadata.annotations).toEqual({ 'example.com/owner': 'platform-team' });
  });

  it('trusts a private database CA: every URL says verify-full and sslrootcert, and every pod that connects mounts the file there', () => {
    const secret = secretData(one(r(), 'Secret', 'halo'));
    const urls = Object.entries(secret).filter(([k]) => k.endsWith('-database-url'));
    expect(urls.length).toBe(6);
    for (const [, url] of urls) expect(url).toMatch(/\?sslmode=verify-full&sslrootcert=\/etc\/halo\/postgres-ca\/ca\.crt$/);
    // Each pod reading a DATABASE_URL (6 Deployments and 6 migration Jobs; the publish Jobs read none) has the CA at that path.
    const connecting = [...all(r(), 'Deployment'), ...all(r(), 'Job')].filter((o) => env(main(o)).DATABASE_URL);
    expect(connecting.length).toBe(12);
    for (const o of connecting) {
      expect(main(o).volumeMounts).toContainEqual(caMount);
      expect(pod(o).volumes).toContainEqual({
        name: 'postgres-ca',
        configMap: { name: 'postgres-ca', items: [{ key: 'ca.crt', path: 'ca.crt' }] },
      });
    }
    // The per-service releases read the same query from the topology.
    expect((one(r(), 'ConfigMap', 'halo-topology').data as Record<string, string>)['postgres-query']).toBe(
      '?sslmode=verify-full&sslrootcert=/etc/halo/postgres-ca/ca.crt',
    );
  });

  it('is what node-postgres honours: pg-connection-string reads sslrootcert as the CA and keeps verification on', () => {
    const url = secretData(one(r(), 'Secret', 'halo'))['catalog-database-url']!;
    const dir = mkdtempSync(join(tmpdir(), 'halo-pg-ca-'));
    try {
      const ca = join(dir, 'ca.crt');
      writeFileSync(ca, '-----BEGIN CERTIFICATE-----\nprivate-ca\n-----END CERTIFICATE-----\n');
      const parsed = parsePgUrl(url.replace('/etc/halo/postgres-ca/ca.crt', ca));
      expect(parsed.ssl).toEqual({ ca: readFileSync(ca, 'utf8') });
      // No rejectUnauthorized: false anywhere, so Node verifies the chain against that CA and the host name.
      expect(JSON.stringify(parsed)).not.toContain('rejectUnauthorized');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps `env` the one way to set a variable: the schema has no extraEnv', () => {
    const bad = structuredClone(r().values) as { defaults: Record<string, unknown> };
    bad.defaults.extraEnv = [{ name: 'A', value: 'b' }];
    expect(validateValues(bad)).toBe(false);
  });
});

describe('an install that cannot run is refused at render time, naming the value', () => {
  const over = overDefaults('halo-refusals-');

  it('no image registry: the images would come from Docker Hub', () => {
    const error = renderError(renderer, over('no-registry', 'image:\n  registry: ""\n'));
    expect(error).toContain('this install cannot run:');
    expect(error).toContain(
      'image.registry is empty: auth, catalog, chat, content, gateway, payments, registry would be pulled as halo/auth:<tag>, from Docker Hub',
    );
  });

  it('…unless `local: true` says the nodes have them (deploy/local), or each component names its own repository', () => {
    const local = render(renderer, over('local', 'local: true\nimage:\n  registry: ""\n'));
    expect(container(one(local, 'Deployment', 'halo-auth')).image).toBe('halo/auth:0.1.0');
    const own = ['gateway', 'registry', 'auth', 'content', 'catalog', 'payments', 'chat']
      .map((c) => `  ${c}:\n    image:\n      repository: ghcr.io/acme/${c}\n`)
      .join('');
    const r = render(renderer, over('own-repositories', `image:\n  registry: ""\ncomponents:\n${own}`));
    expect(container(one(r, 'Deployment', 'halo-auth')).image).toBe('ghcr.io/acme/auth:0.1.0');
  });

  it('no Redis while payments or chat (redis: required) is on', () => {
    expect(renderError(renderer, over('no-redis', 'redis:\n  url: ""\n'))).toContain(
      'redis.url is required: chat and payments cannot run without Redis in production',
    );
    // Without them it is optional (auth and the gateway keep per-replica state).
    const r = render(
      renderer,
      over('no-redis-no-need', 'redis:\n  url: ""\ncomponents:\n  chat:\n    enabled: false\n  payments:\n    enabled: false\n'),
    );
    expect(env(container(one(r, 'Deployment', 'halo-auth'))).REDIS_URL).toEqual({
      secretKeyRef: { name: 'halo', key: 'redis-url', optional: true },
    });
  });

  it('every problem at once, in one message', () => {
    const error = renderError(renderer, over('everything', 'image:\n  registry: ""\nredis:\n  url: ""\nsecrets:\n  jwtSecret: ""\n'));
    for (const value of ['image.registry is empty', 'redis.url is required', 'secrets.jwtSecret is required'])
      expect(error).toContain(value);
  });

  it('required secrets missing: a database password, a signing key', () => {
    // ci/default-values.yaml with one value taken out (a null in a second file is not portable across Helm versions).
    const without = (
      name: string,
      remove: (v: { postgres: { passwords: Record<string, string> }; secrets: { serviceSigningKeys: Record<string, string> } }) => void,
    ) => {
      const v = parse(readFileSync(ci('default-values.yaml'), 'utf8')) as Parameters<typeof remove>[0];
      remove(v);
      return over(name, stringify(v), 'alone');
    };
    expect(
      renderError(
        renderer,
        without('no-password', (v) => delete v.postgres.passwords.catalog),
      ),
    ).toContain('components.catalog has a database: set postgres.host and postgres.passwords.catalog');
    expect(
      renderError(
        renderer,
        without('no-key', (v) => delete v.secrets.serviceSigningKeys.payments),
      ),
    ).toContain('secrets.serviceSigningKeys.payments is required');
  });

  it('with secrets.existingSecret (whose keys the chart cannot see) the Redis key is not optional where it is required, so the pod cannot start without it', () => {
    const r = rendered('existing-secret-values.yaml');
    expect(env(container(one(r, 'Deployment', 'halo-payments'))).REDIS_URL).toEqual({
      secretKeyRef: { name: 'halo-managed', key: 'redis-url' },
    });
    expect(env(container(one(r, 'Deployment', 'halo-auth'))).REDIS_URL).toEqual({
      secretKeyRef: { name: 'halo-managed', key: 'redis-url', optional: true },
    });
  });
});

describe('who reaches the gateway (networkPolicy.gatewayFrom) and the Gateway API route', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'halo-peers-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, yaml: string) => {
    const f = join(dir, `${name}.yaml`);
    writeFileSync(f, yaml);
    return f;
  };

  it('has no silent default: NetworkPolicies on and no peers is refused, naming the value', () => {
    const v = parse(readFileSync(ci('default-values.yaml'), 'utf8')) as { networkPolicy?: unknown };
    delete v.networkPolicy;
    expect(renderError(renderer, [file('no-peers', stringify(v))])).toContain('networkPolicy.gatewayFrom is empty');
    // Off, nothing is needed.
    render(renderer, [file('no-policies', stringify({ ...v, networkPolicy: { enabled: false } }))]);
  });

  it('tells an upgrade that still sets the old networkPolicy.ingressController what replaced it', () => {
    const old = file(
      'old-key',
      'networkPolicy:\n  ingressController:\n    namespaceSelector:\n      matchLabels:\n        kubernetes.io/metadata.name: ingress-nginx\n',
    );
    expect(renderError(renderer, [ci('default-values.yaml'), old])).toContain(
      'networkPolicy.ingressController was replaced by networkPolicy.gatewayFrom',
    );
  });

  // The peers helm/halo/README.md documents (ingress-nginx, Traefik, an AWS ALB's CIDRs, a Gateway API implementation).
  const documented = [
    ...readFileSync(join(CHART, 'README.md'), 'utf8').matchAll(/```yaml\n(# ([^\n]+)\n(?:#[^\n]*\n)*networkPolicy:\n[\s\S]*?)```/g),
  ].map((m) => [m[2]!, m[1]!] as const);
  it('documents four setups', () => {
    expect(documented.map(([title]) => title.split(' ').slice(0, 2).join(' '))).toEqual([
      'ingress-nginx (its',
      'Traefik (its',
      'An AWS',
      'A Gateway',
    ]);
  });
  it.each(documented)("the README's peers for %s render into a valid policy admitting exactly them, and the test pod", (title, yaml) => {
    const r = render(renderer, [ci('default-values.yaml'), file(title.replace(/\W+/g, '-'), yaml)]);
    const policy = one(r, 'NetworkPolicy', 'halo-gateway');
    expect(validateK8sObjects([policy])).toEqual([]);
    const peers = (parse(yaml) as { networkPolicy: { gatewayFrom: unknown[] } }).networkPolicy.gatewayFrom;
    const rule = (policy.spec as { ingress: { from: unknown[]; ports: { port: string }[] }[] }).ingress[0]!;
    expect(rule.ports).toEqual([{ port: 'http', protocol: 'TCP' }]);
    expect(rule.from.slice(0, -1)).toEqual(peers);
    expect(rule.from.at(-1)).toMatchObject({ podSelector: { matchLabels: { 'app.kubernetes.io/component': 'test' } } });
  });

  it('routes an HTTPRoute (ci/extensions-values.yaml) to the gateway Service, valid against the Gateway API CRD schema', () => {
    const route = one(rendered('extensions-values.yaml'), 'HTTPRoute', 'halo');
    expect(route.apiVersion).toBe('gateway.networking.k8s.io/v1');
    expect(route.spec).toEqual({
      parentRefs: [{ name: 'public', namespace: 'envoy-gateway-system', sectionName: 'https' }],
      hostnames: ['api.halo.example.com'],
      rules: [
        {
          matches: [{ path: { type: 'PathPrefix', value: '/' } }],
          backendRefs: [{ name: 'halo-gateway', port: 4000 }],
          timeouts: { request: '3600s' },
        },
      ],
    });
    expect(validateK8sObjects([route])).toEqual([]);
    // The CRD schema is really applied: a wrong path type and a misspelt field are refused.
    const bad = structuredClone(route);
    (bad.spec as { rules: { matches: { path: { type: string } }[] }[] }).rules[0]!.matches[0]!.path.type = 'Prefix';
    expect(validateK8sObjects([bad]).join('\n')).toMatch(/type must be equal to one of the allowed values/);
    const misspelt = structuredClone(route);
    (misspelt.spec as Record<string, unknown>).hostname = ['x'];
    expect(validateK8sObjects([misspelt]).join('\n')).toContain('\'"hostname"\' does not exist');
    expect(all(rendered('default-values.yaml'), 'HTTPRoute')).toEqual([]);
  });

  it('refuses an HTTPRoute attached to no Gateway', () => {
    expect(renderError(renderer, [ci('default-values.yaml'), file('no-parent', 'httpRoute:\n  enabled: true\n')])).toContain(
      'httpRoute.parentRefs is empty',
    );
  });
});

describe("the registry's Studio from outside the cluster (components.registry.studio)", () => {
  const over = overDefaults('halo-studio-');
  const studio = (yaml: string) => `components:\n  registry:\n    studio:\n${yaml.replace(/^/gm, '      ')}\n`;
  const ingressPeers = 'from:\n  - namespaceSelector:\n      matchLabels:\n        kubernetes.io/metadata.name: ingress-internal\n';
  const isStudio = (o: Obj) => o.metadata.name === 'halo-registry-studio';

  it('is off by default: no Ingress or HTTPRoute, and the registry admits only its callers and the scraper', () => {
    const r = rendered('default-values.yaml');
    expect(objectsOf(r).filter(isStudio)).toEqual([]);
    expect(all(r, 'Ingress')).toEqual([]);
    // Its callers (the gateway, the publish hooks) and the scraper: nobody from outside.
    expect(rulesOf(one(r, 'NetworkPolicy', 'halo-registry')).map((rule) => rule.from.length)).toEqual([6, 1]);
  });

  it("enabled (ci/full-values.yaml): an Ingress on the internal class, the host and its TLS, with only /studio to the registry Service's HTTP port", () => {
    const r = rendered('full-values.yaml');
    const ingress = one(r, 'Ingress', 'halo-registry-studio');
    expect(ingress.metadata.labels!['app.kubernetes.io/component']).toBe('registry');
    expect(ingress.metadata.annotations).toEqual({ 'nginx.ingress.kubernetes.io/whitelist-source-range': '10.0.0.0/8' });
    expect(ingress.spec).toEqual({
      ingressClassName: 'nginx-internal',
      tls: [{ hosts: ['studio.halo.example.internal'], secretName: 'halo-studio-tls' }],
      rules: [
        {
          host: 'studio.halo.example.internal',
          http: {
            paths: [{ path: '/studio', pathType: 'Prefix', backend: { service: { name: 'halo-registry', port: { name: 'http' } } } }],
          },
        },
      ],
    });
    // The port it names is the registry's HTTP port (the Studio's), not gRPC; the API (/v1) has no path.
    const service = one(r, 'Service', 'halo-registry').spec as { ports: { name: string; port: number }[] };
    expect(service.ports.find((p) => p.name === 'http')?.port).toBe(4006);
    expect(JSON.stringify(ingress.spec)).not.toMatch(/"path":"\/(v1)?"/);
    expect(validateK8sObjects([ingress])).toEqual([]);
  });

  it('enabled with the Gateway API (ci/extensions-values.yaml): an HTTPRoute with only the /studio prefix to the registry Service, valid against the CRD schema', () => {
    const r = rendered('extensions-values.yaml');
    const route = one(r, 'HTTPRoute', 'halo-registry-studio');
    expect(route.spec).toEqual({
      parentRefs: [{ name: 'internal', namespace: 'envoy-gateway-system', sectionName: 'https' }],
      hostnames: ['studio.halo.example.internal'],
      rules: [{ matches: [{ path: { type: 'PathPrefix', value: '/studio' } }], backendRefs: [{ name: 'halo-registry', port: 4006 }] }],
    });
    expect(validateK8sObjects([route])).toEqual([]);
    // The gateway's own route is untouched, and no Studio Ingress comes with the route.
    expect(one(r, 'HTTPRoute', 'halo')).toBeDefined();
    expect(all(r, 'Ingress')).toEqual([]);
  });

  it("admits the Studio's ingress controller (or Gateway) to the registry's HTTP port, beside its callers", () => {
    expect(rulesOf(one(rendered('full-values.yaml'), 'NetworkPolicy', 'halo-registry'))).toEqual([
      { ports: ['http'], from: ['gateway', 'auth-publish', 'catalog-publish', 'chat-publish', 'content-publish', 'payments-publish'] },
      { ports: ['http'], from: ['namespace ingress-internal, pods app.kubernetes.io/name=ingress-nginx'] },
      { ports: ['http'], from: ['namespace observability, pods app.kubernetes.io/name=prometheus'] },
    ]);
    expect(rulesOf(one(rendered('extensions-values.yaml'), 'NetworkPolicy', 'halo-registry'))[1]).toEqual({
      ports: ['http'],
      from: ['namespace envoy-gateway-system, pods gateway.envoyproxy.io/owning-gateway-name=internal'],
    });
    // Both on: one rule with both peers.
    const both = render(
      renderer,
      over(
        'both',
        studio(
          `ingress:\n  enabled: true\n  host: studio.halo.internal\n  ${ingressPeers.replace(/\n(?=.)/g, '\n  ')}` +
            `httpRoute:\n  enabled: true\n  parentRefs: [{name: internal}]\n  from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: gw}}}]`,
        ),
      ),
    );
    expect(rulesOf(one(both, 'NetworkPolicy', 'halo-registry'))[1]).toEqual({
      ports: ['http'],
      from: ['namespace ingress-internal', 'namespace gw'],
    });
  });

  it('enabled without a host is refused, naming the value', () => {
    expect(
      renderError(renderer, over('no-host', studio(`ingress:\n  enabled: true\n  ${ingressPeers.replace(/\n(?=.)/g, '\n  ')}`))),
    ).toContain("components.registry.studio.ingress.host is required when the Studio's Ingress is enabled");
    expect(renderError(renderer, over('no-parent', studio('httpRoute:\n  enabled: true\n  from: [{podSelector: {}}]')))).toContain(
      'components.registry.studio.httpRoute.parentRefs is empty',
    );
  });

  it('enabled with NetworkPolicies on and no `from` is refused, naming the value; with them off it renders', () => {
    const noPeers = studio('ingress:\n  enabled: true\n  host: studio.halo.internal');
    expect(renderError(renderer, over('no-peers', noPeers))).toContain(
      "components.registry.studio.ingress.from is empty: with networkPolicy.enabled the Studio's Ingress could not reach the registry",
    );
    expect(
      renderError(renderer, over('no-route-peers', studio('httpRoute:\n  enabled: true\n  parentRefs: [{name: internal}]'))),
    ).toContain('components.registry.studio.httpRoute.from is empty');
    const r = render(renderer, over('no-policies', `networkPolicy:\n  enabled: false\n${noPeers}`));
    expect(one(r, 'Ingress', 'halo-registry-studio')).toBeDefined();
    expect(all(r, 'NetworkPolicy')).toEqual([]);
  });

  it('needs the registry: enabled while the registry is off is refused', () => {
    const off = `components:\n  registry:\n    enabled: false\n    studio:\n      ingress:\n        enabled: true\n        host: studio.halo.internal\n`;
    expect(renderError(renderer, over('no-registry', off))).toContain(
      'components.registry.studio.ingress.enabled needs components.registry.enabled',
    );
  });

  it("is the registry's alone: the schema refuses `studio` on another component and a misspelt key in it", () => {
    const bad = structuredClone(rendered('default-values.yaml').values) as { components: Record<string, Record<string, unknown>> };
    bad.components.auth!.studio = {};
    bad.components.registry!.studio = { ingres: {} };
    expect(validateValues(bad)).toBe(false);
    expect(validateValues.errors!.map((e) => e.instancePath)).toEqual(
      expect.arrayContaining(['/components/auth', '/components/registry/studio']),
    );
    expect(renderError(renderer, over('misspelt', studio('ingres: {}')))).toContain(
      'components.registry.studio: Additional property ingres is not allowed',
    );
  });

  it('NOTES say where the Studio is: its host when routed, else the port-forward', () => {
    expect(rendered('default-values.yaml').notes).toContain(
      'kubectl -n halo port-forward svc/halo-registry 4006:4006\n  then open http://127.0.0.1:4006/studio',
    );
    expect(rendered('full-values.yaml').notes).toContain('https://studio.halo.example.internal/studio  (Ingress, class nginx-internal)');
  });
});

describe('hook copies of the Secret never outlive the release', () => {
  const hookObjects = (r: Rendered) => objectsOf(r).filter((o) => o.metadata.annotations?.['helm.sh/hook'] === 'post-delete');

  it.each(['default-values.yaml', 'full-values.yaml'])(
    'ci/%s: the copy is deleted on success, on failure and, by a post-delete Job allowed only that, on uninstall',
    (f) => {
      const r = rendered(f);
      expect(one(r, 'Secret', 'halo-hooks').metadata.annotations!['helm.sh/hook-delete-policy']).toBe(
        'before-hook-creation,hook-succeeded,hook-failed',
      );
      expect(hookObjects(r).map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
        'ServiceAccount/halo-hook-cleanup',
        'Role/halo-hook-cleanup',
        'RoleBinding/halo-hook-cleanup',
        'Job/halo-hook-cleanup',
      ]);
      for (const o of hookObjects(r))
        expect(o.metadata.annotations!['helm.sh/hook-delete-policy']).toBe('before-hook-creation,hook-succeeded');
      expect(one(r, 'Role', 'halo-hook-cleanup').rules).toEqual([
        { apiGroups: [''], resources: ['secrets'], resourceNames: ['halo-hooks'], verbs: ['delete'] },
      ]);
      expect(one(r, 'RoleBinding', 'halo-hook-cleanup').subjects).toEqual([
        { kind: 'ServiceAccount', name: 'halo-hook-cleanup', namespace: 'halo' },
      ]);
      const job = one(r, 'Job', 'halo-hook-cleanup');
      expect(Number(job.metadata.annotations!['helm.sh/hook-weight'])).toBeGreaterThan(
        Number(one(r, 'Role', 'halo-hook-cleanup').metadata.annotations!['helm.sh/hook-weight']),
      );
      const pod = podTemplate(job).spec;
      expect([pod.serviceAccountName, pod.automountServiceAccountToken]).toEqual(['halo-hook-cleanup', true]);
      expect(pod.containers[0]!.securityContext).toMatchObject({ runAsNonRoot: true, readOnlyRootFilesystem: true });
      expect(env(container(job))).toMatchObject({ NAMESPACE: 'halo', SECRET: 'halo-hooks' });
      // The script is valid JavaScript for the image's Node.
      // eslint-disable-next-line @typescript-eslint/no-implied-eval -- compiles the script (never runs it) to prove it parses
      expect(() => new Function(container(job).command![2]!)).not.toThrow();
    },
  );

  it('renders no cleanup where there is no copy (an existing Secret, deploy/local) or when switched off', () => {
    expect(hookObjects(rendered('existing-secret-values.yaml'))).toEqual([]);
    const dir = mkdtempSync(join(tmpdir(), 'halo-cleanup-'));
    try {
      const off = join(dir, 'off.yaml');
      writeFileSync(off, 'hooks:\n  cleanupOnUninstall: false\n');
      const r = render(renderer, [ci('default-values.yaml'), off]);
      expect(hookObjects(r)).toEqual([]);
      expect(one(r, 'Secret', 'halo-hooks')).toBeDefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('publish.acknowledge: a release that may break what clients use, said once', () => {
  const over = overDefaults('halo-ack-');

  it('reaches every publish hook as REGISTRY_PUBLISH_ACKNOWLEDGE, and nothing else; unset, no hook has it', () => {
    const r = render(renderer, over('ack', 'publish:\n  acknowledge: "web moved off Product.sku (#123)"\n'));
    const jobs = all(r, 'Job').filter((j) => j.metadata.name.endsWith('-publish'));
    expect(jobs.length).toBeGreaterThan(0);
    for (const job of jobs) expect(env(container(job)).REGISTRY_PUBLISH_ACKNOWLEDGE).toBe('web moved off Product.sku (#123)');
    for (const d of all(r, 'Deployment')) expect(env(container(d)).REGISTRY_PUBLISH_ACKNOWLEDGE).toBeUndefined();
    for (const job of all(rendered('default-values.yaml'), 'Job')) expect(env(container(job)).REGISTRY_PUBLISH_ACKNOWLEDGE).toBeUndefined();
  });

  it('an empty reason is refused by the schema, naming the value', () => {
    expect(renderError(renderer, over('empty-ack', 'publish:\n  acknowledge: ""\n'))).toMatch(/publish.*acknowledge/);
  });
});

describe('PgBouncer between the database services and PostgreSQL (pgbouncer.enabled)', () => {
  const over = overDefaults('halo-pgbouncer-');
  const databaseServices = ['auth', 'catalog', 'chat', 'content', 'payments', 'registry'];
  const passwords = (r: Rendered) => (r.values as { postgres: { passwords: Record<string, string> } }).postgres.passwords;

  it("is off by default: no PgBouncer object, and every URL, the migration Jobs' too, is the direct one", () => {
    const r = rendered('default-values.yaml');
    expect(objectsOf(r).filter(isPgbouncer)).toEqual([]);
    const secret = secretData(one(r, 'Secret', 'halo'));
    expect(Object.keys(secret).filter((k) => k.startsWith('pgbouncer') || k.endsWith('-migration-url'))).toEqual([]);
    for (const name of databaseServices) {
      expect(parsePgUrl(secret[`${name}-database-url`]!)).toMatchObject({
        host: 'postgres.db.svc.cluster.local',
        port: '5432',
        user: name,
      });
      expect(env(container(one(r, 'Job', `halo-${name}-migrate`))).DATABASE_URL).toEqual({
        secretKeyRef: { name: 'halo-hooks', key: `${name}-database-url` },
      });
    }
  });

  it("enabled (ci/full-values.yaml): a Deployment, its Service, a PodDisruptionBudget and a NetworkPolicy, pods as the components'", () => {
    const r = rendered('full-values.yaml');
    expect(
      objectsOf(r)
        .filter(isPgbouncer)
        .map((o) => `${o.kind}/${o.metadata.name}`)
        .sort(),
    ).toEqual([
      'ConfigMap/halo-pgbouncer',
      'Deployment/halo-pgbouncer',
      'NetworkPolicy/halo-pgbouncer',
      'PodDisruptionBudget/halo-pgbouncer',
      'Service/halo-pgbouncer',
    ]);
    const deployment = one(r, 'Deployment', 'halo-pgbouncer');
    expect((deployment.spec as { replicas: number }).replicas).toBe(3);
    const c = container(deployment);
    expect(c.command).toEqual(['pgbouncer', '/etc/pgbouncer/pgbouncer.ini']);
    expect(c.ports).toEqual([{ name: 'postgres', containerPort: 6432, protocol: 'TCP' }]);
    expect(c.readinessProbe).toMatchObject({ tcpSocket: { port: 'postgres' } });
    expect(c.volumeMounts).toEqual([{ name: 'config', mountPath: '/etc/pgbouncer', readOnly: true }]);
    expect(podTemplate(deployment).spec.volumes).toEqual([
      {
        name: 'config',
        projected: {
          defaultMode: 0o440,
          sources: [
            { configMap: { name: 'halo-pgbouncer', items: [{ key: 'pgbouncer.ini', path: 'pgbouncer.ini' }] } },
            { secret: { name: 'halo', items: [{ key: 'pgbouncer-userlist', path: 'userlist.txt' }] } },
          ],
        },
      },
    ]);
    // The defaults' scheduling, as every component's.
    expect(podTemplate(deployment).spec).toMatchObject({
      nodeSelector: { 'kubernetes.io/os': 'linux' },
      priorityClassName: 'halo-critical',
    });
    expect((one(r, 'Service', 'halo-pgbouncer').spec as { ports: unknown[] }).ports).toEqual([
      { name: 'postgres', port: 6432, targetPort: 'postgres', protocol: 'TCP' },
    ]);
    expect(one(r, 'PodDisruptionBudget', 'halo-pgbouncer').spec).toMatchObject({ maxUnavailable: 1 });
  });

  it('points each database service at it with its own role, password and database; a postgres.urls entry is still used as given', () => {
    const r = rendered('full-values.yaml');
    const secret = secretData(one(r, 'Secret', 'halo'));
    for (const name of databaseServices.filter((n) => n !== 'catalog')) {
      expect(parsePgUrl(secret[`${name}-database-url`]!)).toMatchObject({
        host: 'halo-pgbouncer',
        port: '6432',
        user: name,
        password: passwords(r)[name],
        database: 'halo_prod',
      });
      expect(env(container(one(r, 'Deployment', `halo-${name}`))).DATABASE_URL).toEqual({
        secretKeyRef: { name: 'halo', key: `${name}-database-url` },
      });
    }
    expect(secret['catalog-database-url']).toBe(
      'postgres://catalog:0f1e2d3c4b5a69788796a5b4c3d2e1f0@pgbouncer.example.internal:6432/halo_prod?sslmode=verify-full',
    );
  });

  it('migrates over the direct URL, in the Jobs and at each pod start: the advisory lock is session-level', () => {
    const r = rendered('full-values.yaml');
    const hooks = secretData(one(r, 'Secret', 'halo-hooks'));
    for (const name of databaseServices) {
      expect(env(container(one(r, 'Job', `halo-${name}-migrate`))).DATABASE_URL).toEqual({
        secretKeyRef: { name: 'halo-hooks', key: `${name}-database-migration-url` },
      });
      expect(env(container(one(r, 'Job', `halo-${name}-migrate`))).DATABASE_MIGRATION_URL).toBeUndefined();
      expect(env(container(one(r, 'Deployment', `halo-${name}`))).DATABASE_MIGRATION_URL).toEqual({
        secretKeyRef: { name: 'halo', key: `${name}-database-migration-url` },
      });
    }
    expect(secretData(one(r, 'Secret', 'halo'))['auth-database-migration-url']).toBe(hooks['auth-database-migration-url']);
    expect(parsePgUrl(hooks['auth-database-migration-url']!)).toMatchObject({ host: 'pg.example.internal', port: '6432', user: 'auth' });
    expect(hooks['catalog-database-migration-url']).toBe(hooks['catalog-database-url']);
  });

  it('keeps every password in the Secret (the userlist) and none in a ConfigMap; PgBouncer reaches PostgreSQL with its sslmode', () => {
    const r = rendered('full-values.yaml');
    expect(secretData(one(r, 'Secret', 'halo'))['pgbouncer-userlist']).toBe(
      databaseServices.map((name) => `"${name}" "${passwords(r)[name]}"\n`).join(''),
    );
    const configMaps = JSON.stringify(all(r, 'ConfigMap'));
    for (const password of Object.values(passwords(r))) expect(configMaps).not.toContain(password);
    const ini = (one(r, 'ConfigMap', 'halo-pgbouncer').data as Record<string, string>)['pgbouncer.ini']!;
    expect(ini).not.toContain('server_reset_query');
    for (const line of [
      'halo_prod = host=pg.example.internal port=6432 dbname=halo_prod',
      'listen_port = 6432',
      'auth_file = /etc/pgbouncer/userlist.txt',
      'pool_mode = transaction',
      'default_pool_size = 4',
      'max_db_connections = 20',
      'max_client_conn = 800',
      'ignore_startup_parameters = options',
      'server_tls_sslmode = verify-full',
    ])
      expect(ini.split('\n')).toContain(line);
  });

  it('admits the database services this release runs, and nobody else', () => {
    expect(rulesOf(one(rendered('full-values.yaml'), 'NetworkPolicy', 'halo-pgbouncer'))).toEqual([
      { ports: ['postgres'], from: databaseServices },
    ]);
  });

  it('with secrets.existingSecret, reads the userlist and the migration URLs from that Secret', () => {
    const file = over('existing', 'postgres:\n  host: pg.example.internal\npgbouncer:\n  enabled: true\n  poolMode: session\n', 'alone');
    const r = render(renderer, [ci('existing-secret-values.yaml'), ...file]);
    expect(all(r, 'Secret')).toEqual([]);
    const volume = podTemplate(one(r, 'Deployment', 'halo-pgbouncer')).spec.volumes![0] as unknown as {
      projected: { sources: { secret?: { name: string; items: { key: string }[] } }[] };
    };
    expect(volume.projected.sources[1]!.secret).toEqual({
      name: 'halo-managed',
      items: [{ key: 'pgbouncer-userlist', path: 'userlist.txt' }],
    });
    const withMigrations = render(renderer, [
      ci('existing-secret-values.yaml'),
      ...file,
      ...over('migrations', 'migrations:\n  enabled: true\n', 'alone'),
    ]);
    expect(env(container(one(withMigrations, 'Job', 'halo-auth-migrate'))).DATABASE_URL).toEqual({
      secretKeyRef: { name: 'halo-managed', key: 'auth-database-migration-url' },
    });
  });

  it('enabled without postgres.host is refused, naming the value; transaction pooling needs no migration Jobs', () => {
    const noHost = renderError(
      renderer,
      over('no-host', 'postgres:\n  host: ""\n  urls:\n    auth: postgres://auth:x@pg/halo\npgbouncer:\n  enabled: true\n'),
    );
    expect(noHost).toContain('this install cannot run:');
    expect(noHost).toContain('pgbouncer.enabled needs postgres.host');
    const noJobs = render(renderer, over('no-migrations', 'pgbouncer:\n  enabled: true\nmigrations:\n  enabled: false\n'));
    expect(all(noJobs, 'Job').filter((j) => j.metadata.name.endsWith('-migrate'))).toEqual([]);
    expect(env(container(one(noJobs, 'Deployment', 'halo-auth'))).DATABASE_MIGRATION_URL).toEqual({
      secretKeyRef: { name: 'halo', key: 'auth-database-migration-url' },
    });
    const session = render(renderer, over('session', 'pgbouncer:\n  enabled: true\n  poolMode: session\nmigrations:\n  enabled: false\n'));
    const ini = (one(session, 'ConfigMap', 'halo-pgbouncer').data as Record<string, string>)['pgbouncer.ini']!;
    expect(ini).toContain('pool_mode = session');
    expect(ini).not.toContain('server_reset_query');
  });

  it('the schema refuses a pool mode PgBouncer would break transactions with, and a misspelt key', () => {
    const bad = structuredClone(rendered('full-values.yaml').values) as { pgbouncer: Record<string, unknown> };
    bad.pgbouncer.poolMode = 'statement';
    bad.pgbouncer.maxClientConnections = 100;
    expect(validateValues(bad)).toBe(false);
    expect(validateValues.errors!.map((e) => e.instancePath)).toEqual(expect.arrayContaining(['/pgbouncer/poolMode', '/pgbouncer']));
    expect(renderError(renderer, over('statement', 'pgbouncer:\n  enabled: true\n  poolMode: statement\n'))).toContain(
      'pgbouncer.poolMode',
    );
  });
});
