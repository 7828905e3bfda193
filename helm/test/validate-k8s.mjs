// Validates Kubernetes objects against the API's OpenAPI schemas, as compiled by the
// `kubernetes-models` package (ESM only, hence a child process of the Jest suite): required
// fields, types, enums and formats (quantities, int-or-string, …). Unknown fields are the
// TypeScript check's job (k8s-schemas.ts).
//
//   node helm/test/validate-k8s.mjs < objects.json   →   [{ index, kind, name, errors: [...] }]
import { readFileSync } from 'node:fs';

// Custom resources: their group's package (as CRD_MODELS in k8s-schemas.ts).
const CRD_MODELS = {
  'monitoring.coreos.com': '@kubernetes-models/prometheus-operator',
  'gateway.networking.k8s.io': '@kubernetes-models/gateway-api',
};
const packageOf = (apiVersion) => CRD_MODELS[apiVersion.split('/')[0]] ?? 'kubernetes-models';

const objects = JSON.parse(readFileSync(0, 'utf8'));
const problems = [];
for (const [index, obj] of objects.entries()) {
  const name = obj?.metadata?.name;
  const fail = (errors) => problems.push({ index, kind: obj?.kind, name, errors });
  if (!obj || typeof obj.apiVersion !== 'string' || typeof obj.kind !== 'string') {
    fail(['apiVersion and kind are required']);
    continue;
  }
  let Model;
  try {
    // Core objects (apiVersion v1) live under kubernetes-models/v1, the others under their group.
    ({ [obj.kind]: Model } = await import(`${packageOf(obj.apiVersion)}/${obj.apiVersion}/${obj.kind}`));
  } catch {
    fail([`no schema for ${obj.apiVersion} ${obj.kind}`]);
    continue;
  }
  if (typeof Model !== 'function' || Model.apiVersion !== obj.apiVersion || Model.kind !== obj.kind) {
    fail([`no schema for ${obj.apiVersion} ${obj.kind}`]);
    continue;
  }
  try {
    new Model(obj).validate();
  } catch (err) {
    fail(String(err.message).split(', '));
  }
}
process.stdout.write(JSON.stringify(problems));
