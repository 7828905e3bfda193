import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import ts from 'typescript';

/**
 * Validates Kubernetes objects offline, in two independent ways, both from the Kubernetes OpenAPI
 * schemas as packaged by `kubernetes-models` (and the CRDs' schemas by `@kubernetes-models/*`):
 *
 * - its compiled JSON-schema validators (helm/test/validate-k8s.mjs): required fields, types,
 *   enums, formats — what `kubeconform` checks by default;
 * - its TypeScript types, with each object as a typed literal: an unknown or misspelt field is an
 *   excess-property error at any depth — what `kubeconform -strict` and the API server's strict
 *   field validation (kubectl's default) reject.
 *
 * Returns one line per problem; empty means every object passed both.
 */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata?: { name?: string };
  [key: string]: unknown;
}

const HERE = __dirname;

export function validateK8sObjects(objects: K8sObject[]): string[] {
  return [...validateWithSchemas(objects), ...validateStrictFields(objects)];
}

function label(obj: K8sObject): string {
  return `${obj.kind}/${obj.metadata?.name ?? '?'}`;
}

function validateWithSchemas(objects: K8sObject[]): string[] {
  const run = spawnSync(process.execPath, [join(HERE, 'validate-k8s.mjs')], {
    input: JSON.stringify(objects),
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (run.status !== 0) throw new Error(`validate-k8s.mjs failed: ${run.stderr}`);
  const problems = JSON.parse(run.stdout) as { index: number; errors: string[] }[];
  return problems.flatMap((p) => p.errors.map((e) => `${label(objects[p.index]!)}: ${e}`));
}

/**
 * The package of a group's schemas: Kubernetes' own in `kubernetes-models`, custom resources the
 * chart renders in their `@kubernetes-models/*` package (the Prometheus Operator's ServiceMonitor,
 * the Gateway API's HTTPRoute: generated from their CRDs' OpenAPI schemas).
 */
export const CRD_MODELS: Readonly<Record<string, string>> = {
  'monitoring.coreos.com': '@kubernetes-models/prometheus-operator',
  'gateway.networking.k8s.io': '@kubernetes-models/gateway-api',
};

/** `<package>/<group>/<version>/<Kind>` exports `I<Kind>`. */
function modelPath(obj: K8sObject): string {
  const group = obj.apiVersion.includes('/') ? obj.apiVersion.slice(0, obj.apiVersion.indexOf('/')) : '';
  return `${CRD_MODELS[group] ?? 'kubernetes-models'}/${obj.apiVersion}/${obj.kind}`;
}

function validateStrictFields(objects: K8sObject[]): string[] {
  // An ES module file, so the ESM-only package's types resolve through its `exports`.
  const file = resolve(HERE, '__k8s_objects__.mts');
  const lines: string[] = [];
  objects.forEach((obj, i) => {
    lines.push(`import type { I${obj.kind} as T${i} } from '${modelPath(obj)}';`);
  });
  objects.forEach((obj, i) => {
    lines.push(`export const o${i}: T${i} = ${JSON.stringify(obj)};`);
  });
  const source = lines.join('\n');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, ...rest) =>
    resolve(name) === file ? ts.createSourceFile(name, source, version, true) : getSourceFile(name, version, ...rest);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => resolve(name) === file || fileExists(name);
  const readFile = host.readFile.bind(host);
  host.readFile = (name) => (resolve(name) === file ? source : readFile(name));

  const program = ts.createProgram([file], options, host);
  const diagnostics = ts.getPreEmitDiagnostics(program);
  return diagnostics.map((d) => {
    const message = ts.flattenDiagnosticMessageText(d.messageText, ' ');
    if (d.file && d.start !== undefined && resolve(d.file.fileName) === file) {
      // Name the object: the line of the literal is `export const o<i>`.
      const line = d.file.getLineAndCharacterOfPosition(d.start).line;
      const i = line - objects.length;
      const obj = objects[i];
      return `${obj ? label(obj) : `line ${line + 1}`}: ${message}`;
    }
    return message;
  });
}
