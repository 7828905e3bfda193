import type { ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  hookPhases,
  orderHooks,
  releaseObjects,
  type DeploymentSpec,
  type JobSpec,
  type K8sObject,
  type PodSpec,
  type PodTemplate,
} from './k8s';
import { objectData, podmanRunArgs, writeVolume } from './pod-spec';
import { runProbe, type ProbeTarget } from './probes';
import { imageExists, inspectContainer, podman, watchDied } from './podman';
import { ServiceProxies, type ReadyPod } from './service-proxies';

/**
 * A rehearsal of a cluster install on one machine: the objects a chart renders, run as podman
 * containers the way a kubelet and Helm would run them. What it honours:
 * - Deployments: one container per pod with the pod's image, command, args, env (values, Secret and
 *   ConfigMap references, `$(VAR)`), envFrom, volumes (emptyDir as tmpfs with its size, ConfigMap
 *   and Secret files), security context (user, group, fsGroup, read-only root filesystem with no
 *   tmpfs of podman's own, dropped capabilities, no privilege escalation), memory and CPU limits,
 *   startup / liveness / readiness probes (httpGet, grpc, tcpSocket, exec), the preStop hook and
 *   the termination grace period; a restart policy for crashes; rolling updates (maxSurge 1,
 *   maxUnavailable 0: the new pod ready before an old one leaves its Services).
 * - Services: a proxy container per Service answering on the Service's DNS names (short, with the
 *   namespace, `.svc` and `.svc.cluster.local`) and forwarding to its ready pods (./service-proxy.ts).
 * - Jobs and hook Pods: run to completion, retried up to backoffLimit, within activeDeadlineSeconds.
 * - Helm: pre-install/pre-upgrade hooks by weight, the release's objects, `--wait` for its
 *   Deployments, post-install/post-upgrade hooks; hook-delete policies.
 * What it does not: scheduling, NetworkPolicy, RBAC and ServiceAccount tokens (no API server),
 * PodDisruptionBudgets, autoscaling, Ingress. A kind it cannot run is listed by `ignored`.
 */
export interface ClusterOptions {
  /** Prefix of the network and of every container, unique per run. */
  name: string;
  namespace: string;
  /** Files the pods mount (ConfigMaps, Secrets, endpoints): under here. */
  workDir: string;
  /** An image with `node` to run the Service proxies. */
  proxyImage: string;
  /** Services whose first port is published on the host's loopback: name → host port. */
  publish?: Record<string, number>;
  log?: (line: string) => void;
}

interface PodState {
  name: string;
  owner: string;
  container: string;
  labels: Record<string, string>;
  spec: PodSpec;
  ready: boolean;
  started: boolean;
  ip?: string;
  /** podman's restart count when the probes last looked (a restart makes the pod unready). */
  restarts: number;
  startedAt: string;
  probeTimer?: NodeJS.Timeout;
  failures: { liveness: number; readiness: number; startup: number };
  stopping: boolean;
  createdAt: number;
}

export class Cluster {
  readonly network: string;
  private readonly objects = new Map<string, K8sObject>();
  private readonly pods = new Map<string, PodState>();
  /** Deployment name → its current template's hash. */
  private readonly revisions = new Map<string, string>();
  readonly ignored = new Set<string>();
  /** What happened, in order: `hook Job/x`, `apply Deployment/y`, `ready Deployment/y`, `done Job/x`. */
  readonly events: string[] = [];
  /** Per Deployment: ms from its first pod's container creation to that pod's first readiness. */
  readonly startToReady: Record<string, number> = {};
  /** Hook Secrets and ConfigMaps of the phase running now. */
  private readonly hooksOfPhase: K8sObject[] = [];
  private readonly log: (line: string) => void;

  constructor(private readonly opts: ClusterOptions) {
    this.network = `${opts.name}-net`;
    this.log = opts.log ?? ((line) => process.stderr.write(`${line}\n`));
    mkdirSync(opts.workDir, { recursive: true });
    this.proxies = new ServiceProxies({ ...opts, network: this.network });
  }

  private readonly proxies: ServiceProxies;
  private closed = false;
  private events$: ChildProcess | undefined;

  private readyPods(): ReadyPod[] {
    return [...this.pods.values()]
      .filter((p) => p.ready && p.ip)
      .map((p) => ({ ip: p.ip!, labels: p.labels, ports: p.spec.containers[0]!.ports ?? [] }));
  }

  async up(): Promise<void> {
    await podman(['network', 'create', '--label', `halo-cluster=${this.opts.name}`, this.network]);
    this.watchDeaths();
  }

  /**
   * A kubelet learns at once that a container died (its pod leaves its Services then, not at the
   * next probe): podman's event stream says so here.
   */
  private watchDeaths(): void {
    this.events$ = watchDied(`halo-cluster=${this.opts.name}`, (name) => {
      const pod = [...this.pods.values()].find((p) => p.container === name);
      if (!pod || pod.stopping) return;
      pod.started = false;
      this.setReady(pod, false);
      clearTimeout(pod.probeTimer);
      this.schedule(pod, 200);
    });
  }

  /** Removes every container, the network and the work files. */
  async down(): Promise<void> {
    this.closed = true;
    this.events$?.kill();
    for (const pod of this.pods.values()) {
      pod.stopping = true;
      clearTimeout(pod.probeTimer);
    }
    const listed = await podman(['ps', '-a', '--filter', `label=halo-cluster=${this.opts.name}`, '--format', '{{.Names}}'], {
      allowFailure: true,
    });
    const names = listed.stdout.split('\n').filter(Boolean);
    if (names.length > 0) await podman(['rm', '-f', '-t', '0', ...names], { allowFailure: true });
    await podman(['network', 'rm', '-f', this.network], { allowFailure: true });
    rmSync(this.opts.workDir, { recursive: true, force: true });
  }

  /** Creates a ConfigMap or Secret outside any release (as `kubectl create` would). */
  applyObject(object: K8sObject): void {
    if (object.kind !== 'ConfigMap' && object.kind !== 'Secret')
      throw new Error(`applyObject takes ConfigMaps and Secrets, not ${object.kind}`);
    this.objects.set(this.key(object), object);
    this.refreshMounts(object);
  }

  /** Runs a container that is not part of a chart (a database standing in for a managed one). */
  async runExternal(
    name: string,
    image: string,
    args: { aliases: string[]; env?: Record<string, string>; mounts?: string[]; cmd?: string[] },
  ): Promise<string> {
    const container = `${this.opts.name}-${name}`;
    await podman([
      'run',
      '-d',
      '--name',
      container,
      '--label',
      `halo-cluster=${this.opts.name}`,
      '--network',
      this.network,
      ...args.aliases.flatMap((a) => ['--network-alias', a]),
      ...Object.entries(args.env ?? {}).flatMap(([k, v]) => ['-e', `${k}=${v}`]),
      ...(args.mounts ?? []).flatMap((m) => ['-v', m]),
      '--restart',
      'always',
      image,
      ...(args.cmd ?? []),
    ]);
    return container;
  }

  /** `helm install`: pre-install hooks, the release's objects, --wait, post-install hooks. */
  install(objects: K8sObject[], opts: { timeoutMs?: number } = {}): Promise<void> {
    return this.release(objects, 'install', opts.timeoutMs ?? 300_000);
  }

  /** `helm upgrade`: pre-upgrade hooks, changed objects (Deployments roll), --wait, post-upgrade hooks. */
  upgrade(objects: K8sObject[], opts: { timeoutMs?: number } = {}): Promise<void> {
    return this.release(objects, 'upgrade', opts.timeoutMs ?? 300_000);
  }

  private async release(objects: K8sObject[], action: 'install' | 'upgrade', timeoutMs: number): Promise<void> {
    for (const hook of orderHooks(objects, `pre-${action}`)) await this.runHook(hook);
    this.endPhase();
    for (const object of releaseObjects(objects)) await this.apply(object);
    const deployments = objects.filter((o) => o.kind === 'Deployment' && hookPhases(o).length === 0);
    await this.waitReady(
      deployments.map((d) => d.metadata.name),
      timeoutMs,
    );
    for (const hook of orderHooks(objects, `post-${action}`)) await this.runHook(hook);
    this.endPhase();
  }

  private key(object: { kind: string; metadata: { name: string } }): string {
    return `${object.kind}/${object.metadata.name}`;
  }

  private async apply(object: K8sObject): Promise<void> {
    this.events.push(`apply ${object.kind}/${object.metadata.name}`);
    const before = this.objects.get(this.key(object));
    this.objects.set(this.key(object), object);
    switch (object.kind) {
      case 'Secret':
      case 'ConfigMap':
        // Files of pods that mount it follow, as the kubelet's sync does.
        this.refreshMounts(object);
        return;
      case 'Service':
        if (!before) await this.proxies.start(object);
        return;
      case 'Deployment':
        return this.applyDeployment(object);
      case 'ServiceAccount':
        return;
      default:
        this.ignored.add(object.kind);
    }
  }

  private async runHook(hook: K8sObject): Promise<void> {
    this.events.push(`hook ${hook.kind}/${hook.metadata.name}`);
    this.log(`hook ${hook.kind}/${hook.metadata.name} (${hook.metadata.annotations?.['helm.sh/hook']})`);
    if (hook.kind === 'Secret' || hook.kind === 'ConfigMap') {
      this.objects.set(this.key(hook), hook);
      this.hooksOfPhase.push(hook);
      return;
    }
    if (hook.kind === 'Job') {
      const spec = hook.spec as JobSpec;
      await this.runToCompletion(hook.metadata.name, spec.template, spec.backoffLimit ?? 6, (spec.activeDeadlineSeconds ?? 600) * 1000);
    } else if (hook.kind === 'Pod') {
      await this.runToCompletion(hook.metadata.name, { metadata: hook.metadata, spec: hook.spec as PodSpec }, 0, 300_000);
    } else this.ignored.add(hook.kind);
    this.events.push(`done ${hook.kind}/${hook.metadata.name}`);
  }

  /** Helm deletes a phase's hooks with `hook-succeeded` once every hook of the phase succeeded. */
  private endPhase(): void {
    for (const hook of this.hooksOfPhase.splice(0)) {
      if ((hook.metadata.annotations?.['helm.sh/hook-delete-policy'] ?? '').includes('hook-succeeded')) this.objects.delete(this.key(hook));
    }
  }

  /** A Job's pod run to completion: exit 0 within the deadline, else up to `backoffLimit` more tries. */
  async runToCompletion(name: string, template: PodTemplate, backoffLimit: number, deadlineMs: number): Promise<void> {
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      const pod = `${name}-${randomBytes(3).toString('hex')}`;
      const container = await this.createContainer(pod, template, { restart: 'no' });
      const remaining = deadlineMs - (Date.now() - started);
      const waited = await Promise.race([
        podman(['wait', container], { allowFailure: true }).then((r) => Number(r.stdout.trim())),
        new Promise<null>((r) => setTimeout(() => r(null), Math.max(0, remaining)).unref()),
      ]);
      const out = await podman(['logs', container], { allowFailure: true });
      const logs = (out.stdout + out.stderr).trim();
      await podman(['rm', '-f', '-t', '0', container], { allowFailure: true });
      if (waited === 0) return;
      const why = waited === null ? 'DeadlineExceeded' : `exit ${waited}`;
      this.log(`job ${name}: attempt ${attempt + 1} failed (${why})\n${logs.split('\n').slice(-15).join('\n')}`);
      if (waited === null || attempt >= backoffLimit)
        throw new Error(`Job ${name} failed (${why}): ${logs.split('\n').slice(-5).join(' | ')}`);
    }
  }

  // ---------------------------------------------------------------- Deployments

  private async applyDeployment(object: K8sObject): Promise<void> {
    const spec = object.spec as DeploymentSpec;
    const name = object.metadata.name;
    const revision = hashOf(spec.template);
    const old = [...this.pods.values()].filter((p) => p.owner === name);
    if (this.revisions.get(name) === revision && old.length === (spec.replicas ?? 1)) return;
    this.revisions.set(name, revision);
    const replicas = spec.replicas ?? 1;
    if (old.length === 0) {
      for (let i = 0; i < replicas; i++) await this.startPod(name, spec.template);
      return;
    }
    // Rolling: one new pod at a time, ready before one old pod leaves (maxSurge 1, maxUnavailable 0).
    this.log(`deployment ${name}: rolling out a new revision`);
    for (let i = 0; i < Math.max(replicas, old.length); i++) {
      if (i < replicas) {
        const fresh = await this.startPod(name, spec.template);
        await this.until(`${fresh.name} ready`, () => fresh.ready, 180_000);
      }
      const leaving = old[i];
      if (leaving) await this.stopPod(leaving);
    }
  }

  private async startPod(owner: string, template: PodTemplate): Promise<PodState> {
    const name = `${owner}-${hashOf(template).slice(0, 8)}-${randomBytes(2).toString('hex')}`;
    for (const init of template.spec.initContainers ?? []) {
      await this.runToCompletion(
        `${name}-init-${init.name}`,
        { metadata: template.metadata, spec: { ...template.spec, containers: [init], initContainers: [] } },
        0,
        300_000,
      );
    }
    const createdAt = Date.now();
    const container = await this.createContainer(name, template, { restart: 'always' });
    const info = await this.inspect(container);
    const pod: PodState = {
      name,
      owner,
      container,
      labels: template.metadata.labels ?? {},
      spec: template.spec,
      ready: false,
      started: false,
      ip: info.ip,
      restarts: info.restarts,
      startedAt: info.startedAt,
      failures: { liveness: 0, readiness: 0, startup: 0 },
      stopping: false,
      createdAt,
    };
    this.pods.set(name, pod);
    this.schedule(pod, 0);
    return pod;
  }

  /** Leaves its Services, runs its preStop hook, then SIGTERM with the grace period, as the kubelet does. */
  private async stopPod(pod: PodState): Promise<void> {
    pod.stopping = true;
    pod.ready = false;
    clearTimeout(pod.probeTimer);
    if (!this.closed) this.proxies.sync(this.readyPods());
    const grace = pod.spec.terminationGracePeriodSeconds ?? 30;
    const started = Date.now();
    const preStop = pod.spec.containers[0]!.lifecycle?.preStop;
    if (preStop?.exec) await podman(['exec', pod.container, ...preStop.exec.command], { allowFailure: true });
    else if (preStop?.sleep) await sleep(preStop.sleep.seconds * 1000);
    const left = Math.max(1, Math.round(grace - (Date.now() - started) / 1000));
    await podman(['stop', '-t', String(left), pod.container], { allowFailure: true });
    await podman(['rm', '-f', '-t', '0', pod.container], { allowFailure: true });
    this.pods.delete(pod.name);
  }

  /** Waits until every pod of these Deployments is ready (`helm --wait`). */
  async waitReady(deployments: string[], timeoutMs: number): Promise<void> {
    const pending = () =>
      deployments.filter((d) => {
        const pods = [...this.pods.values()].filter((p) => p.owner === d);
        return pods.length === 0 || pods.some((p) => !p.ready);
      });
    try {
      await this.until('deployments ready', () => pending().length === 0, timeoutMs);
    } catch {
      const logs = await Promise.all(
        pending().map(async (d) => {
          const pod = [...this.pods.values()].find((p) => p.owner === d);
          const out = pod ? await podman(['logs', '--tail', '20', pod.container], { allowFailure: true }) : undefined;
          return `${d}: ${out ? (out.stdout + out.stderr).trim() : 'no pod'}`;
        }),
      );
      throw new Error(`not ready within ${timeoutMs / 1000} s: ${pending().join(', ')}\n${logs.join('\n')}`);
    }
  }

  /** The current pods of a Deployment; `restarts`: the container restarts the runner has seen. */
  podsOf(deployment: string): { name: string; container: string; ready: boolean; ip?: string; restarts: number }[] {
    return [...this.pods.values()]
      .filter((p) => p.owner === deployment)
      .map(({ name, container, ready, ip, restarts }) => ({ name, container, ready, ip, restarts }));
  }

  // ---------------------------------------------------------------- containers

  private async createContainer(pod: string, template: PodTemplate, opts: { restart: 'always' | 'no' }): Promise<string> {
    const container = `${this.opts.name}-${pod}`;
    const image = template.spec.containers[0]?.image;
    if (template.spec.containers[0]?.imagePullPolicy === 'Never' && image && !(await imageExists(image))) {
      throw new Error(`${pod}: ErrImageNeverPull: ${image} is not in the local store (npm run images)`);
    }
    const args = podmanRunArgs({
      pod,
      container,
      template,
      restart: opts.restart,
      network: this.network,
      label: `halo-cluster=${this.opts.name}`,
      namespace: this.opts.namespace,
      volumesDir: join(this.opts.workDir, 'volumes'),
      dataOf: (kind, name) => this.dataOf(kind, name),
    });
    await podman(args);
    return container;
  }

  /** A Secret's or ConfigMap's data as strings (Secrets' `data` is base64). */
  private dataOf(kind: 'Secret' | 'ConfigMap', name: string): Record<string, string> | undefined {
    const object = this.objects.get(`${kind}/${name}`);
    return object ? objectData(object) : undefined;
  }

  private refreshMounts(object: K8sObject): void {
    const kind = object.kind as 'Secret' | 'ConfigMap';
    writeVolume(objectData(object), join(this.opts.workDir, 'volumes', kind.toLowerCase(), object.metadata.name));
  }

  private inspect(container: string) {
    return inspectContainer(container, this.network);
  }

  // ---------------------------------------------------------------- probes

  private schedule(pod: PodState, delayMs: number): void {
    if (pod.stopping || this.closed) return;
    pod.probeTimer = setTimeout(() => void this.probeOnce(pod), delayMs);
  }

  private async probeOnce(pod: PodState): Promise<void> {
    if (pod.stopping || this.closed) return;
    const c = pod.spec.containers[0]!;
    const info = await this.inspect(pod.container);
    if (pod.stopping || this.closed) return;
    if (info.restarts !== pod.restarts || info.startedAt !== pod.startedAt || !info.running) {
      // Crashed (and restarted by its policy): not ready until its probes pass again.
      pod.restarts = info.restarts;
      pod.startedAt = info.startedAt;
      pod.started = false;
      pod.failures = { liveness: 0, readiness: 0, startup: 0 };
      if (pod.ready) this.setReady(pod, false);
    }
    pod.ip = info.ip;
    if (!info.running || !pod.ip) return this.schedule(pod, 500);
    if (!pod.started) {
      const probe = c.startupProbe;
      if (!probe || (await runProbe(probe, this.target(pod)))) pod.started = true;
      else if (++pod.failures.startup >= (probe.failureThreshold ?? 3)) return this.restart(pod, 'startup probe failed');
      if (!pod.started) return this.schedule(pod, (probe?.periodSeconds ?? 10) * 1000);
    }
    if (c.livenessProbe && !(await runProbe(c.livenessProbe, this.target(pod)))) {
      if (++pod.failures.liveness >= (c.livenessProbe.failureThreshold ?? 3)) return this.restart(pod, 'liveness probe failed');
    } else pod.failures.liveness = 0;
    const readiness = c.readinessProbe;
    const ok = !readiness || (await runProbe(readiness, this.target(pod)));
    if (ok) {
      pod.failures.readiness = 0;
      if (!pod.ready) this.setReady(pod, true);
    } else if (++pod.failures.readiness >= (readiness?.failureThreshold ?? 3) && pod.ready) this.setReady(pod, false);
    // Until ready, look again soon (a cluster would wait the full period; this only saves time).
    const period = Math.min(c.livenessProbe?.periodSeconds ?? 10, readiness?.periodSeconds ?? 10) * 1000;
    this.schedule(pod, pod.ready ? period : Math.min(period, 1000));
  }

  private target(pod: PodState): ProbeTarget {
    return { ip: pod.ip!, container: pod.container, ports: pod.spec.containers[0]!.ports ?? [] };
  }

  private async restart(pod: PodState, why: string): Promise<void> {
    this.log(`${pod.name}: ${why}; restarting`);
    this.setReady(pod, false);
    await podman(['restart', '-t', String(pod.spec.terminationGracePeriodSeconds ?? 30), pod.container], { allowFailure: true });
    this.schedule(pod, 500);
  }

  private setReady(pod: PodState, ready: boolean): void {
    if (pod.ready === ready) return;
    pod.ready = ready;
    if (ready && this.startToReady[pod.owner] === undefined) this.startToReady[pod.owner] = Date.now() - pod.createdAt;
    this.events.push(`${ready ? 'ready' : 'unready'} Deployment/${pod.owner}`);
    this.log(`${pod.name}: ${ready ? 'ready' : 'not ready'}`);
    if (!this.closed) this.proxies.sync(this.readyPods());
  }

  // ---------------------------------------------------------------- helpers

  private async until(what: string, ok: () => boolean, timeoutMs: number): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!ok()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await sleep(100);
    }
  }
}

function hashOf(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex');
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
