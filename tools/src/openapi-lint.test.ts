import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { OPENAPI_FILE } from './compose-rest';

/**
 * The composed OpenAPI document (gateway/openapi.json) as client generators' linters read it:
 * 0 errors and 0 warnings from Redocly's `recommended` rules (redocly.yaml; its one ignored
 * finding, with the reason, in .redocly.lint-ignore.yaml) and Spectral's `spectral:oas`
 * (.spectral.yaml), through `npm run lint:openapi` (tools/bin/openapi-lint.mjs: Redocly's
 * library is an ES module, so it runs in its own process). docs/api/README.md, "Lint".
 * compose-rest.test.ts proves the file is what the manifests compose to.
 */

const SCRIPT = resolve(__dirname, '../bin/openapi-lint.mjs');
type Finding = { severity: string; rule: string; at: string; message: string };
type Operation = { operationId: string; responses: Record<string, unknown>; security?: unknown };
const doc = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8')) as {
  info: Record<string, unknown>;
  paths: Record<string, Record<string, Operation>>;
};

function lintFile(file: string): { redocly: Finding[]; spectral: Finding[] } {
  const run = spawnSync(process.execPath, [SCRIPT, file, '--json'], { encoding: 'utf8' });
  if (!run.stdout) throw new Error(`openapi-lint failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as { redocly: Finding[]; spectral: Finding[] };
}

const line = (f: Finding) => `${f.severity} ${f.rule} ${f.at}: ${f.message}`;

it("gateway/openapi.json has no finding from Redocly's recommended rules nor Spectral's spectral:oas", () => {
  const found = lintFile(OPENAPI_FILE);
  expect(found.redocly.map(line)).toEqual([]);
  expect(found.spectral.map(line)).toEqual([]);
});

it('every operation but the OAuth redirect has a 2XX answer (what the one ignored finding would hide)', () => {
  const without = Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops)
      .filter(([, op]) => !Object.keys(op.responses).some((s) => /^2\d\d$/.test(s)))
      .map(([method]) => `${method.toUpperCase()} ${path}`),
  );
  expect(without).toEqual(['GET /auth/oauth/{provider}/start']);
});

it('the linters are not rubber stamps: a document without security, licence or contact fails both', () => {
  const broken = structuredClone(doc);
  delete broken.info.license;
  delete broken.info.contact;
  delete broken.paths['/hello']!.get!.security;
  const dir = mkdtempSync(join(tmpdir(), 'halo-openapi-lint-'));
  try {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(broken, null, 2));
    const found = lintFile(file);
    expect(found.redocly.map((f) => f.rule)).toEqual(expect.arrayContaining(['security-defined', 'info-license']));
    expect(found.spectral.map((f) => f.rule)).toContain('info-contact');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
