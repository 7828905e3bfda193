import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

/**
 * Validates a document against the OpenAPI 3.1 schema with @seriousme/openapi-schema-validator
 * (the official JSON Schemas of the specification, checked by Ajv). The validator is an ES module
 * that reads its schemas through `import.meta.url`, so it runs in its own Node process: the same
 * way from the compose tool and from Jest (which runs tests as CommonJS).
 */
export interface OpenApiValidation {
  valid: boolean;
  /** The specification version the document was checked against (`3.1`). */
  version?: string;
  errors?: unknown;
}

const SCRIPT = `
import { Validator } from '@seriousme/openapi-schema-validator';
let input = '';
for await (const chunk of process.stdin) input += chunk;
const validator = new Validator();
const result = await validator.validate(JSON.parse(input));
process.stdout.write(JSON.stringify({ valid: result.valid, version: validator.version, errors: result.errors }));
`;

export function validateOpenApi(doc: unknown): OpenApiValidation {
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', SCRIPT], {
    // Resolves the validator the way this package does (a devDependency of @halo/tools).
    cwd: resolve(__dirname, '..'),
    input: JSON.stringify(doc),
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (run.status !== 0) throw new Error(`The OpenAPI validator failed to run: ${run.stderr.trim() || run.error?.message}`);
  return JSON.parse(run.stdout) as OpenApiValidation;
}
