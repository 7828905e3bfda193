import { cpuCores, expandEnv, memoryBytes, orderHooks, releaseObjects, selects, type K8sObject } from './k8s';

/** The Kubernetes and Helm rules the container runner follows, on their own. */
const object = (kind: string, name: string, hook?: string, weight?: string): K8sObject => ({
  apiVersion: 'v1',
  kind,
  metadata: {
    name,
    ...(hook ? { annotations: { 'helm.sh/hook': hook, ...(weight ? { 'helm.sh/hook-weight': weight } : {}) } } : {}),
  },
});

describe('expandEnv', () => {
  const defined = new Map([
    ['PASSWORD', 's3cret'],
    ['ADDRESS', 'postgres:5432/halo'],
  ]);

  it('replaces $(VAR) with a variable defined before it, as the kubelet does', () => {
    expect(expandEnv('postgres://catalog:$(PASSWORD)@$(ADDRESS)', defined)).toBe('postgres://catalog:s3cret@postgres:5432/halo');
  });

  it('leaves an unknown reference as written, and $$ escapes a dollar', () => {
    expect(expandEnv('$(MISSING) and $$(PASSWORD)', defined)).toBe('$(MISSING) and $(PASSWORD)');
  });
});

describe("Helm's order", () => {
  const objects = [
    object('Job', 'halo-auth-migrate', 'pre-install,pre-upgrade', '0'),
    object('Job', 'halo-provision-roles', 'pre-install,pre-upgrade', '-5'),
    object('Secret', 'halo-hooks', 'pre-install,pre-upgrade', '-10'),
    object('Job', 'halo-auth-publish', 'post-install,post-upgrade'),
    object('Deployment', 'halo-auth'),
    object('Service', 'halo-auth'),
    object('Secret', 'halo'),
    object('ConfigMap', 'halo-topology'),
  ];

  it('runs the hooks of a phase by weight', () => {
    expect(orderHooks(objects, 'pre-upgrade').map((o) => o.metadata.name)).toEqual([
      'halo-hooks',
      'halo-provision-roles',
      'halo-auth-migrate',
    ]);
    expect(orderHooks(objects, 'post-install').map((o) => o.metadata.name)).toEqual(['halo-auth-publish']);
  });

  it("applies the release's own objects in its install order: Secrets and ConfigMaps, Services, then workloads", () => {
    expect(releaseObjects(objects).map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      'Secret/halo',
      'ConfigMap/halo-topology',
      'Service/halo-auth',
      'Deployment/halo-auth',
    ]);
  });
});

describe('selects', () => {
  it('matches when every pair of the selector is on the pod, and an empty selector selects nothing', () => {
    const labels = { 'app.kubernetes.io/component': 'catalog', 'app.kubernetes.io/instance': 'halo', extra: 'x' };
    expect(selects({ 'app.kubernetes.io/component': 'catalog', 'app.kubernetes.io/instance': 'halo' }, labels)).toBe(true);
    expect(selects({ 'app.kubernetes.io/component': 'catalog-migrate' }, labels)).toBe(false);
    expect(selects({}, labels)).toBe(false);
  });
});

describe('quantities', () => {
  it('reads memory and CPU as Kubernetes writes them', () => {
    expect(memoryBytes('512Mi')).toBe(512 * 2 ** 20);
    expect(memoryBytes('1G')).toBe(1e9);
    expect(cpuCores('250m')).toBe(0.25);
    expect(cpuCores('2')).toBe(2);
    expect(() => memoryBytes('lots')).toThrow('unreadable memory quantity lots');
  });
});
