import { chmodSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cpuCores, expandEnv, memoryBytes, type Container, type K8sObject, type PodSpec, type PodTemplate } from './k8s';

/**
 * A pod template as `podman run` arguments: what a kubelet would give the container (./cluster.ts
 * says which parts of a pod the runner honours).
 */
export interface PodRun {
  pod: string;
  container: string;
  template: PodTemplate;
  restart: 'always' | 'no';
  network: string;
  /** `key=value`, put on every container of the run. */
  label: string;
  namespace: string;
  /** Where ConfigMap and Secret volumes are written (`<dir>/<kind>/<name>/<key>`). */
  volumesDir: string;
  dataOf(kind: 'Secret' | 'ConfigMap', name: string): Record<string, string> | undefined;
}

export function podmanRunArgs(run: PodRun): string[] {
  const { pod, template } = run;
  const spec = template.spec;
  if (spec.containers.length !== 1) throw new Error(`${pod}: the runner starts pods of one container (${spec.containers.length} here)`);
  const c = spec.containers[0]!;
  const sc = { ...spec.securityContext, ...c.securityContext };
  const args = ['run', '-d', '--name', run.container, '--hostname', pod.slice(0, 63), '--label', run.label];
  args.push('--network', run.network, '--restart', run.restart);
  if (sc.runAsNonRoot && sc.runAsUser === 0) throw new Error(`${pod}: runAsNonRoot with runAsUser 0`);
  if (sc.runAsUser !== undefined) args.push('--user', `${sc.runAsUser}:${sc.runAsGroup ?? sc.runAsUser}`);
  if (spec.securityContext?.fsGroup !== undefined) args.push('--group-add', String(spec.securityContext.fsGroup));
  // Kubernetes mounts nothing writable that the pod did not ask for: none of podman's tmpfs on /tmp, /run.
  if (sc.readOnlyRootFilesystem) args.push('--read-only', '--read-only-tmpfs=false');
  for (const cap of sc.capabilities?.drop ?? []) args.push('--cap-drop', cap);
  for (const cap of sc.capabilities?.add ?? []) args.push('--cap-add', cap);
  if (sc.allowPrivilegeEscalation === false) args.push('--security-opt', 'no-new-privileges');
  const limits = c.resources?.limits ?? {};
  if (limits.memory) args.push('--memory', String(memoryBytes(limits.memory)));
  if (limits.cpu) args.push('--cpus', String(cpuCores(limits.cpu)));
  for (const [k, v] of envOf(run, c)) args.push('-e', `${k}=${v}`);
  args.push(...mountsOf(run, spec, c));
  // `command` replaces the image's ENTRYPOINT and drops its CMD; `args` replace CMD (as in a pod).
  const entry = c.command ? ['--entrypoint', JSON.stringify(c.command)] : [];
  return [...args, ...entry, c.image, ...(c.args ?? [])];
}

/** The container's environment, resolved as the kubelet does: envFrom, then env in order with `$(VAR)`. */
function envOf(run: PodRun, c: Container): Map<string, string> {
  const env = new Map<string, string>();
  for (const from of c.envFrom ?? []) {
    const ref = (from.configMapRef ?? from.secretRef)!;
    const kind = from.configMapRef ? 'ConfigMap' : 'Secret';
    const data = run.dataOf(kind, ref.name);
    if (!data) {
      if (ref.optional) continue;
      throw new Error(`${run.pod}: CreateContainerConfigError: ${kind} ${ref.name} not found`);
    }
    for (const [k, v] of Object.entries(data)) env.set(`${from.prefix ?? ''}${k}`, v);
  }
  for (const v of c.env ?? []) {
    const ref = v.valueFrom?.secretKeyRef ?? v.valueFrom?.configMapKeyRef;
    if (v.value !== undefined) env.set(v.name, expandEnv(v.value, env));
    else if (ref) {
      const kind = v.valueFrom?.secretKeyRef ? 'Secret' : 'ConfigMap';
      const value = run.dataOf(kind, ref.name)?.[ref.key];
      if (value === undefined) {
        if (ref.optional) continue;
        throw new Error(`${run.pod}: CreateContainerConfigError: ${kind} ${ref.name} has no key ${ref.key}`);
      }
      env.set(v.name, value);
    } else if (v.valueFrom?.fieldRef) {
      const path = v.valueFrom.fieldRef.fieldPath;
      const value = path === 'metadata.name' ? run.pod : path === 'metadata.namespace' ? run.namespace : undefined;
      if (value === undefined) throw new Error(`${run.pod}: fieldRef ${path} is not supported by the runner`);
      env.set(v.name, value);
    } else env.set(v.name, '');
  }
  return env;
}

function mountsOf(run: PodRun, spec: PodSpec, c: Container): string[] {
  const args: string[] = [];
  for (const mount of c.volumeMounts ?? []) {
    const volume = (spec.volumes ?? []).find((v) => v.name === mount.name);
    if (!volume) throw new Error(`${run.pod}: volume ${mount.name} is not defined`);
    if (volume.emptyDir) {
      const size = volume.emptyDir.sizeLimit ? `,tmpfs-size=${memoryBytes(volume.emptyDir.sizeLimit)}` : '';
      args.push('--mount', `type=tmpfs,destination=${mount.mountPath}${size},tmpfs-mode=1777`);
    } else if (volume.configMap || volume.secret) {
      const kind = volume.configMap ? 'ConfigMap' : 'Secret';
      const source = volume.configMap?.name ?? volume.secret!.secretName;
      const data = run.dataOf(kind, source);
      if (!data) {
        if (volume.configMap?.optional || volume.secret?.optional) continue;
        throw new Error(`${run.pod}: ${kind} ${source} for volume ${volume.name} not found`);
      }
      const dir = join(run.volumesDir, kind.toLowerCase(), source);
      writeVolume(data, dir);
      args.push('-v', `${dir}:${mount.mountPath}:ro`);
    } else throw new Error(`${run.pod}: volume ${volume.name}: only emptyDir, configMap and secret volumes run here`);
  }
  return args;
}

/** A Secret's or ConfigMap's data as strings (a Secret's `data` is base64). */
export function objectData(object: K8sObject): Record<string, string> {
  const data: Record<string, string> = {};
  for (const [k, v] of Object.entries((object.data as Record<string, string> | undefined) ?? {})) {
    data[k] = object.kind === 'Secret' ? Buffer.from(v, 'base64').toString('utf8') : v;
  }
  return Object.assign(data, (object.stringData as Record<string, string> | undefined) ?? {});
}

/**
 * Writes the keys as files, each replaced at once (a reader never sees half a file), readable by
 * the pod's user: what the kubelet keeps in a ConfigMap or Secret volume.
 */
export function writeVolume(data: Record<string, string>, dir: string): void {
  mkdirSync(dir, { recursive: true });
  for (const [key, value] of Object.entries(data)) {
    const tmp = join(dir, `.${key}.tmp`);
    writeFileSync(tmp, value);
    chmodSync(tmp, 0o444);
    renameSync(tmp, join(dir, key));
  }
}
