#!/usr/bin/env node
// `npm run lint:openapi [file]`: lints an OpenAPI document (default: the composed
// gateway/openapi.json) with Redocly's rules (redocly.yaml, .redocly.lint-ignore.yaml) and
// Spectral's (.spectral.yaml), the configs their CLIs read. Prints one line per finding, or with
// --json `{ redocly: [...], spectral: [...] }`; exits 1 on any finding. An ES module because
// @redocly/openapi-core is one (tools/src/openapi-lint.test.ts runs this file).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { lint, loadConfig } from '@redocly/openapi-core';
import { parse } from 'yaml';

const require = createRequire(import.meta.url);
const { Document, Spectral } = require('@stoplight/spectral-core');
const { Json } = require('@stoplight/spectral-parsers');
const { oas } = require('@stoplight/spectral-rulesets');

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const args = process.argv.slice(2);
const file = resolve(args.find((a) => !a.startsWith('--')) ?? resolve(ROOT, 'gateway/openapi.json'));

const config = await loadConfig({ configPath: resolve(ROOT, 'redocly.yaml') });
const redocly = (await lint({ ref: file, config }))
  .filter((p) => !p.ignored)
  .map((p) => ({ severity: p.severity, rule: p.ruleId, at: p.location[0]?.pointer ?? '', message: p.message }));

// The one ruleset .spectral.yaml may extend, mapped to its package (spectral-cli does the same).
const spectralConfig = parse(readFileSync(resolve(ROOT, '.spectral.yaml'), 'utf8'));
const bases = [spectralConfig.extends].flat();
if (bases.length !== 1 || bases[0] !== 'spectral:oas') throw new Error(`.spectral.yaml: only extends: [spectral:oas] is supported here`);
const spectral = new Spectral();
spectral.setRuleset({ extends: [oas], ...(spectralConfig.rules ? { rules: spectralConfig.rules } : {}) });
const SEVERITY = ['error', 'warn', 'info', 'hint'];
const spectralFindings = (await spectral.run(new Document(readFileSync(file, 'utf8'), Json, file))).map((r) => ({
  severity: SEVERITY[r.severity],
  rule: r.code,
  at: r.path.join('.'),
  message: r.message,
}));

if (args.includes('--json')) process.stdout.write(`${JSON.stringify({ redocly, spectral: spectralFindings })}\n`);
else {
  for (const [tool, found] of [
    ['redocly', redocly],
    ['spectral', spectralFindings],
  ]) {
    const count = (s) => found.filter((f) => f.severity === s).length;
    process.stdout.write(`${tool}: ${count('error')} errors, ${count('warn')} warnings, ${found.length} findings\n`);
    for (const f of found) process.stdout.write(`  ${f.severity} ${f.rule} ${f.at}: ${f.message}\n`);
  }
}
process.exitCode = redocly.length + spectralFindings.length > 0 ? 1 : 0;
