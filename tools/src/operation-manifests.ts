import { Kind, parse, type OperationDefinitionNode } from 'graphql';

/**
 * The persisted-operation manifests client teams build (docs/registry.md, "Registering client
 * operations"), read into what the registry takes: `[{id, body, name}]`. Pure: no file, no request.
 */
export interface ManifestOperation {
  id: string;
  body: string;
  /** The Apollo entry's name, else the document's operation name; '' if anonymous. */
  name: string;
}

export const MANIFEST_FORMATS = [
  "Apollo's persisted query manifest (@apollo/generate-persisted-query-manifest)",
  "Relay's persisted_queries.json",
  "GraphQL Code Generator's persisted-documents.json",
] as const;

/** A manifest this module refuses: the CLI's usage error (exit 2), before any request. */
export class ManifestError extends Error {}

const APOLLO_FORMAT = 'apollo-persisted-query-manifest';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const unrecognised = () => new ManifestError(`not an operation manifest: expected one of ${MANIFEST_FORMATS.join(', ')}`);

/** The name of the document's (first) operation; '' when it has none or does not parse (the registry says why). */
export function operationName(body: string): string {
  try {
    const op = parse(body).definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
    return op?.name?.value ?? '';
  } catch {
    return '';
  }
}

function checked(entries: readonly { id: unknown; body: unknown; name?: unknown }[]): ManifestOperation[] {
  if (entries.length === 0) throw new ManifestError('the manifest holds no operation');
  const seen = new Set<string>();
  return entries.map((e, i) => {
    if (typeof e.id !== 'string' || e.id === '') throw new ManifestError(`operation ${i + 1} has no id`);
    if (typeof e.body !== 'string') throw new ManifestError(`operation ${e.id}: its body is not a string`);
    if (seen.has(e.id)) throw new ManifestError(`operation ${e.id} appears twice`);
    seen.add(e.id);
    const name = typeof e.name === 'string' ? e.name : operationName(e.body);
    return { id: e.id, body: e.body, name };
  });
}

/** `{"format":"apollo-persisted-query-manifest","version":1,"operations":[{id,name,type,body}]}`. */
function apollo(manifest: Record<string, unknown>): ManifestOperation[] {
  if (manifest.version !== 1)
    throw new ManifestError(`an Apollo persisted query manifest of version ${String(manifest.version)}: only version 1 is read`);
  const operations = manifest.operations;
  if (!Array.isArray(operations)) throw new ManifestError('an Apollo persisted query manifest without an "operations" list');
  return checked(
    operations.map((op: unknown, i) => {
      if (!isObject(op)) throw new ManifestError(`operation ${i + 1} is not an object`);
      return { id: op.id, body: op.body, name: op.name };
    }),
  );
}

/** Reads a manifest (its JSON already parsed), whichever of the formats it is, detected by its shape. */
export function parseManifest(manifest: unknown): ManifestOperation[] {
  if (!isObject(manifest)) throw unrecognised();
  if (manifest.format === APOLLO_FORMAT) return apollo(manifest);
  if ('format' in manifest) throw unrecognised();
  // The map form, id → document text: Relay's persisted_queries.json and GraphQL Code Generator's
  // (client preset) persisted-documents.json have the same shape, so they are read alike.
  const entries = Object.entries(manifest);
  if (entries.length > 0 && !entries.some(([, body]) => typeof body === 'string')) throw unrecognised();
  return checked(entries.map(([id, body]) => ({ id, body })));
}

/** Reads a manifest file's text: not JSON, or none of the formats, is a ManifestError. */
export function parseManifestText(text: string): ManifestOperation[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ManifestError(`not JSON: ${(err as Error).message}`);
  }
  return parseManifest(json);
}
