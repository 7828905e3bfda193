import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as ts from 'typescript';
import { pathParams, routeVersions, versionMediaType, versionSchemas, type RestRoute } from '@halo/kit/rest';
import { loadManifests, manifestSource, OPENAPI_FILE } from './compose-rest';

/**
 * A typed client generated from the composed document (gateway/openapi.json) with
 * openapi-typescript, called through openapi-fetch, compiled with tsc: one call per operation the
 * services' manifests declare (each version, its path parameters, its body, `Idempotency-Key`,
 * and on the unversioned path each negotiated version's media type). The calls are written from
 * the manifests, not from the document, so a document that disagrees with a manifest does not
 * compile (the last case proves it on a document with one operation missing).
 */

const ROOT = resolve(__dirname, '../..');
const GENERATOR = resolve(ROOT, 'node_modules/openapi-typescript/bin/cli.js');
const FETCH_TYPES = resolve(ROOT, 'node_modules/openapi-fetch/dist/index.d.mts');

const openApiPath = (path: string) => path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
const lit = (s: string) => JSON.stringify(s);

/** One route version's call, and type assertions on what the manifest says it has. */
function callOf(route: RestRoute, version: number): string {
  const id = version === 1 ? route.id : `${route.id}V${version}`;
  const path = openApiPath(version === 1 ? route.path : `/api/v${version}${route.path}`);
  const op = `operations[${lit(id)}]`;
  const s = versionSchemas(route, version);
  const names = pathParams(route.path);
  const params = [
    names.length > 0 && `path: {} as ${op}['parameters']['path']`,
    route.idempotent && `header: { 'Idempotency-Key': 'k' }`,
  ].filter(Boolean);
  const init = [
    params.length > 0 && `params: { ${params.join(', ')} }`,
    s.body &&
      `body: {} as ${op}['requestBody'] extends infer B ? NonNullable<B> extends { content: { 'application/json': infer J } } ? J : never : never`,
  ].filter(Boolean);
  const lines = [
    `// ${route.method} ${path}`,
    `export async function ${id}() {`,
    `  const r = await client.${route.method}(${lit(path)}${init.length > 0 ? `, { ${init.join(', ')} }` : ''});`,
    ...names.map((n) => `  const _${n}: keyof ${op}['parameters']['path'] = ${lit(n)};`),
    `  return r;`,
    `}`,
  ];
  const others = version === 1 ? routeVersions(route).filter(([n]) => n !== 1) : [];
  for (const [n] of others) {
    const media = versionMediaType(n);
    const ok = Object.keys(route.responses).find((st) => Number(st) < 300 && route.responses[Number(st)]!.schema);
    if (!ok) continue;
    lines.push(
      `export async function ${id}AsV${n}() {`,
      `  const r = await client.${route.method}(${lit(path)}, { ${[...init, `headers: { accept: ${lit(media)} }`].join(', ')} });`,
      `  type Body = ${op}['responses'][${ok}]['content'][${lit(media)}];`,
      `  return r.response.json() as Promise<Body>;`,
      `}`,
    );
  }
  return lines.join('\n');
}

function clientSource(): string {
  const calls = loadManifests(manifestSource).flatMap((m) => m.routes.flatMap((r) => routeVersions(r).map(([n]) => callOf(r, n))));
  return [
    `import createClient from 'openapi-fetch';`,
    `import type { operations, paths } from './schema';`,
    `const client = createClient<paths>({ baseUrl: 'http://127.0.0.1:4000' });`,
    // The v2 media type of catalog's unversioned list: integer cents, no decimal price.
    `export async function productsInCents(): Promise<number[]> {`,
    `  const page = (await listProductsAsV2()) ;`,
    `  return page.data.map((p) => p.price_cents);`,
    `}`,
    // A client that reads only application/json gets v1 alone (a v1|v2 union has no common price).
    `const v1Client = createClient<paths, 'application/json'>({ baseUrl: 'http://127.0.0.1:4000' });`,
    `export async function productsInUnits(): Promise<number[]> {`,
    `  const { data } = await v1Client.GET('/products');`,
    `  return data ? data.data.map((p) => p.price) : [];`,
    `}`,
    ...calls,
  ].join('\n\n');
}

/** tsc's diagnostics for the generated client of `document`. */
function compileClient(document: string): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'halo-openapi-client-'));
  try {
    const spec = join(dir, 'openapi.json');
    writeFileSync(spec, document);
    const gen = spawnSync(process.execPath, [GENERATOR, spec, '-o', join(dir, 'schema.d.ts')], { encoding: 'utf8' });
    if (gen.status !== 0) throw new Error(`openapi-typescript failed: ${gen.stderr}`);
    writeFileSync(join(dir, 'client.ts'), clientSource());
    const program = ts.createProgram([join(dir, 'client.ts')], {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
      types: [],
      skipLibCheck: true,
      noUnusedLocals: false,
      paths: { 'openapi-fetch': [FETCH_TYPES] },
    });
    return ts
      .getPreEmitDiagnostics(program)
      .map(
        (d) =>
          `${d.file ? `${d.file.fileName.slice(dir.length + 1)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1} ` : ''}${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`,
      );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const committed = readFileSync(OPENAPI_FILE, 'utf8');

it('a client generated from gateway/openapi.json compiles a call to every operation the manifests declare', () => {
  expect(compileClient(committed)).toEqual([]);
});

it('it does not compile when the document lacks what a manifest declares', () => {
  const doc = JSON.parse(committed) as { paths: Record<string, Record<string, { parameters?: unknown[] }>> };
  delete doc.paths['/posts/{id}/comments']!.get;
  doc.paths['/api/payments']!.post!.parameters = [];
  const errors = compileClient(JSON.stringify(doc)).join('\n');
  expect(errors).toMatch(/commentsOfPost/);
  expect(errors).toMatch(/Idempotency-Key|header/);
});
