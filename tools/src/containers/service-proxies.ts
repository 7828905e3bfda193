import { chmodSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { selects, type K8sObject, type ServiceSpec } from './k8s';
import { podman, ROOT } from './podman';

/** The proxy each Service runs (./service-proxy.ts), compiled. */
const SERVICE_PROXY = resolve(ROOT, 'tools/dist/containers/service-proxy.js');

/** A pod that may receive traffic: ready, with an address. */
export interface ReadyPod {
  ip: string;
  labels: Record<string, string>;
  ports: { name?: string; containerPort: number }[];
}

interface ServiceState {
  object: K8sObject;
  dir: string;
}

/**
 * The runner's Services (./cluster.ts): one proxy container each, on the Service's DNS names, fed
 * an endpoints file that lists the ready pods its selector picks, as the EndpointSlice
 * controller and kube-proxy would.
 */
export class ServiceProxies {
  private readonly services = new Map<string, ServiceState>();
  private ready: ReadyPod[] = [];

  constructor(
    private readonly opts: {
      name: string;
      namespace: string;
      network: string;
      workDir: string;
      proxyImage: string;
      publish?: Record<string, number>;
    },
  ) {}

  async start(object: K8sObject): Promise<void> {
    const name = object.metadata.name;
    const spec = object.spec as ServiceSpec;
    const dir = join(this.opts.workDir, 'services', name);
    mkdirSync(dir, { recursive: true });
    const state: ServiceState = { object, dir };
    this.services.set(name, state);
    this.write(state);
    const ns = this.opts.namespace;
    const aliases = [name, `${name}.${ns}`, `${name}.${ns}.svc`, `${name}.${ns}.svc.cluster.local`];
    const published = this.opts.publish?.[name];
    await podman([
      'run',
      '-d',
      '--name',
      `${this.opts.name}-svc-${name}`,
      '--label',
      `halo-cluster=${this.opts.name}`,
      '--network',
      this.opts.network,
      ...aliases.flatMap((a) => ['--network-alias', a]),
      ...(published ? ['-p', `127.0.0.1:${published}:${spec.ports[0]!.port}`] : []),
      '--read-only',
      '--user',
      '65534:65534',
      '-v',
      `${SERVICE_PROXY}:/proxy/service-proxy.js:ro`,
      '-v',
      `${dir}:/endpoints:ro`,
      '--restart',
      'always',
      this.opts.proxyImage,
      'node',
      '/proxy/service-proxy.js',
      '/endpoints/endpoints.json',
    ]);
  }

  /** Every Service's endpoints from the pods ready now. */
  sync(ready: ReadyPod[]): void {
    this.ready = ready;
    for (const state of this.services.values()) this.write(state);
  }

  private write(state: ServiceState): void {
    const spec = state.object.spec as ServiceSpec;
    const pods = this.ready.filter((p) => selects(spec.selector, p.labels));
    const endpoints: Record<string, string[]> = {};
    for (const port of spec.ports) {
      const target = port.targetPort ?? port.port;
      endpoints[String(port.port)] = pods.flatMap((p) => {
        const containerPort = typeof target === 'number' ? target : p.ports.find((x) => x.name === target)?.containerPort;
        return containerPort ? [`${p.ip}:${containerPort}`] : [];
      });
    }
    const file = join(state.dir, 'endpoints.json');
    writeFileSync(`${file}.tmp`, JSON.stringify({ ports: spec.ports.map((p) => ({ port: p.port, name: p.name })), endpoints }));
    chmodSync(`${file}.tmp`, 0o444);
    renameSync(`${file}.tmp`, file);
  }
}
