/**
 * The parts of Kubernetes objects that the container runner (./cluster.ts) reads, and the pure rules
 * it follows from Kubernetes and Helm: label selectors, `$(VAR)` references in env values, Helm's
 * hook phases and weights. Everything else in an object is ignored by the runner.
 */

export interface Metadata {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: Metadata;
  // The rest depends on the kind; the runner reads it through the interfaces below.
  [key: string]: unknown;
}

export interface KeyRef {
  name: string;
  key: string;
  optional?: boolean;
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: KeyRef;
    configMapKeyRef?: KeyRef;
    fieldRef?: { fieldPath: string };
  };
}

export interface EnvFromSource {
  prefix?: string;
  configMapRef?: { name: string; optional?: boolean };
  secretRef?: { name: string; optional?: boolean };
}

export interface Probe {
  httpGet?: { path?: string; port: number | string; scheme?: string };
  grpc?: { port: number; service?: string };
  tcpSocket?: { port: number | string };
  exec?: { command: string[] };
  initialDelaySeconds?: number;
  periodSeconds?: number;
  timeoutSeconds?: number;
  failureThreshold?: number;
  successThreshold?: number;
}

export interface SecurityContext {
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  readOnlyRootFilesystem?: boolean;
  allowPrivilegeEscalation?: boolean;
  capabilities?: { drop?: string[]; add?: string[] };
  fsGroup?: number;
  seccompProfile?: { type: string };
}

export interface Container {
  name: string;
  image: string;
  imagePullPolicy?: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
  envFrom?: EnvFromSource[];
  ports?: { name?: string; containerPort: number; protocol?: string }[];
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] }; sleep?: { seconds: number } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: SecurityContext;
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean; subPath?: string }[];
}

export interface Volume {
  name: string;
  emptyDir?: { medium?: string; sizeLimit?: string };
  configMap?: { name: string; items?: { key: string; path: string }[]; defaultMode?: number; optional?: boolean };
  secret?: { secretName: string; items?: { key: string; path: string }[]; defaultMode?: number; optional?: boolean };
  projected?: unknown;
}

export interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  volumes?: Volume[];
  securityContext?: SecurityContext;
  restartPolicy?: string;
  terminationGracePeriodSeconds?: number;
  automountServiceAccountToken?: boolean;
  serviceAccountName?: string;
}

export interface PodTemplate {
  metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: PodSpec;
}

export interface DeploymentSpec {
  replicas?: number;
  selector: { matchLabels?: Record<string, string> };
  template: PodTemplate;
  strategy?: { type?: string; rollingUpdate?: { maxSurge?: number | string; maxUnavailable?: number | string } };
}

export interface JobSpec {
  backoffLimit?: number;
  activeDeadlineSeconds?: number;
  template: PodTemplate;
}

export interface ServicePort {
  name?: string;
  port: number;
  targetPort?: number | string;
  protocol?: string;
}

export interface ServiceSpec {
  selector?: Record<string, string>;
  ports: ServicePort[];
}

/** Whether `labels` carry every pair of `selector` (an empty selector selects nothing, as a Service's). */
export function selects(selector: Record<string, string> | undefined, labels: Record<string, string> | undefined): boolean {
  const pairs = Object.entries(selector ?? {});
  return pairs.length > 0 && pairs.every(([k, v]) => labels?.[k] === v);
}

/**
 * Kubernetes' `$(VAR)` expansion of env values: a reference to a variable defined earlier in the
 * same list (or in envFrom) is replaced by its value, `$$(VAR)` is a literal `$(VAR)`, and a
 * reference to an unknown variable stays as written.
 */
export function expandEnv(value: string, defined: ReadonlyMap<string, string>): string {
  return value.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (match: string, name?: string) => {
    if (match === '$$') return '$';
    return defined.get(name!) ?? match;
  });
}

/** The Helm hook phases an object belongs to (`helm.sh/hook`), empty for a release object. */
export function hookPhases(object: K8sObject): string[] {
  const hook = object.metadata.annotations?.['helm.sh/hook'];
  return hook ? hook.split(',').map((p) => p.trim()) : [];
}

/** Helm's order for the hooks of one phase: by weight, then by kind (Helm's install order), then by name. */
export function orderHooks(objects: K8sObject[], phase: string): K8sObject[] {
  const weight = (o: K8sObject) => Number(o.metadata.annotations?.['helm.sh/hook-weight'] ?? '0');
  return objects
    .filter((o) => hookPhases(o).includes(phase))
    .sort((a, b) => weight(a) - weight(b) || kindRank(a.kind) - kindRank(b.kind) || a.metadata.name.localeCompare(b.metadata.name));
}

/** Part of Helm's InstallOrder (pkg/release/util/kind_sorter.go): the kinds these charts render. */
const INSTALL_ORDER = [
  'Namespace',
  'NetworkPolicy',
  'ResourceQuota',
  'LimitRange',
  'PodSecurityPolicy',
  'PodDisruptionBudget',
  'ServiceAccount',
  'Secret',
  'SecretList',
  'ConfigMap',
  'StorageClass',
  'PersistentVolume',
  'PersistentVolumeClaim',
  'CustomResourceDefinition',
  'ClusterRole',
  'ClusterRoleList',
  'ClusterRoleBinding',
  'ClusterRoleBindingList',
  'Role',
  'RoleList',
  'RoleBinding',
  'RoleBindingList',
  'Service',
  'DaemonSet',
  'Pod',
  'ReplicationController',
  'ReplicaSet',
  'Deployment',
  'HorizontalPodAutoscaler',
  'StatefulSet',
  'Job',
  'CronJob',
  'IngressClass',
  'Ingress',
  'APIService',
];

function kindRank(kind: string): number {
  const i = INSTALL_ORDER.indexOf(kind);
  return i < 0 ? INSTALL_ORDER.length : i;
}

/** Release objects (no hook) in Helm's install order. */
export function releaseObjects(objects: K8sObject[]): K8sObject[] {
  return objects.filter((o) => hookPhases(o).length === 0).sort((a, b) => kindRank(a.kind) - kindRank(b.kind));
}

/** A Kubernetes quantity of memory (`512Mi`, `1G`, `64Mi`) in bytes. */
export function memoryBytes(quantity: string): number {
  const match = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(quantity.trim());
  if (!match) throw new Error(`unreadable memory quantity ${quantity}`);
  const unit = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9, T: 1e12 }[match[2] ?? ''] ?? 1;
  return Math.round(Number(match[1]) * unit);
}

/** A Kubernetes quantity of CPU (`500m`, `2`) in cores. */
export function cpuCores(quantity: string): number {
  return quantity.endsWith('m') ? Number(quantity.slice(0, -1)) / 1000 : Number(quantity);
}
