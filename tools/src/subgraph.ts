import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import {
  defaultServiceUrl,
  EDGE_SERVICE_NAMES,
  isEdgeService,
  SERVICES,
  serviceContract,
  type EdgeServiceName,
  type RestPart,
  type ServiceContract,
} from '@halo/kit';
import { schemaFile } from './checkout-contracts';
import { loadManifests } from './compose-rest';

/**
 * `npm run subgraph -- <check|publish|list|rollback|routes> --service NAME …`: a service team's
 * CLI for the schema registry (docs/registry.md, "CLI"). Exit 0 ok, 1 check failed or refused,
 * 2 usage error, 3 registry unreachable. Defaults reach the system `npm start` runs.
 */
export const USAGE = `Usage: npm run subgraph -- <check|publish|list|rollback|routes> --service NAME
         [--schema FILE] [--routes FILE] [--url URL] [--registry URL] [--acknowledge "<reason>"] [--json]
  check     compose this contract with every other service's current one, report changes and their usage
  publish   check, then make it the service's current version (the gateways pick it up)
  list      the services' current versions (with --service: that service's versions)
  rollback  republish the service's previous version, after the same checks
  routes    print the service's REST part (for --routes FILE)
Credentials: HALO_API_KEY (an admin key with scope schema:write); none needed against npm start.`;

const COMMANDS = ['check', 'publish', 'list', 'rollback', 'routes'] as const;
type Command = (typeof COMMANDS)[number];

export class UsageError extends Error {}
class Unreachable extends Error {}

export interface CliOptions {
  command: Command;
  service?: EdgeServiceName;
  schema?: string;
  routes?: string;
  url?: string;
  registry: string;
  acknowledge?: string;
  json: boolean;
}

/** The command line, checked: a UsageError (exit 2) names what is wrong. */
export function parseCli(argv: readonly string[], env: Record<string, string | undefined> = process.env): CliOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        service: { type: 'string' },
        schema: { type: 'string' },
        routes: { type: 'string' },
        url: { type: 'string' },
        registry: { type: 'string' },
        acknowledge: { type: 'string' },
        json: { type: 'boolean', default: false },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values, positionals } = parsed;
  const [command, ...extra] = positionals;
  if (!command) throw new UsageError('a command is required');
  if (!(COMMANDS as readonly string[]).includes(command)) throw new UsageError(`unknown command: ${command}`);
  if (extra.length > 0) throw new UsageError(`unexpected argument: ${extra[0]}`);
  const service = values.service;
  if (service === undefined && command !== 'list') throw new UsageError('--service is required');
  if (service !== undefined && !isEdgeService(service)) {
    throw new UsageError(`--service must be one of ${EDGE_SERVICE_NAMES.join(', ')} (got ${service})`);
  }
  if (values.acknowledge !== undefined && (values.acknowledge.trim() === '' || !['publish', 'rollback'].includes(command))) {
    throw new UsageError('--acknowledge "<reason>" goes with publish or rollback, and needs a reason');
  }
  for (const flag of ['url', 'registry'] as const) {
    const v = values[flag];
    if (v !== undefined && !/^https?:\/\/[^\s]+$/.test(v)) throw new UsageError(`--${flag} must be an http(s) URL`);
  }
  for (const flag of ['schema', 'routes'] as const) {
    const v = values[flag];
    if (v !== undefined && !existsSync(v)) throw new UsageError(`--${flag}: no such file: ${v}`);
  }
  const registry = (values.registry ?? env.REGISTRY_URL ?? `http://127.0.0.1:${SERVICES.registry.httpPort}`).replace(/\/+$/, '');
  return {
    command: command as Command,
    ...(service ? { service } : {}),
    ...(values.schema ? { schema: values.schema } : {}),
    ...(values.routes ? { routes: values.routes } : {}),
    ...(values.url ? { url: values.url } : {}),
    registry,
    ...(values.acknowledge ? { acknowledge: values.acknowledge.trim() } : {}),
    json: values.json,
  };
}

/** The REST part: from `--routes FILE` (what `routes` prints), else built from this checkout's manifest. */
function restOf(service: EdgeServiceName, file: string | undefined): RestPart | null {
  if (file) {
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as RestPart | null;
    } catch (err) {
      throw new UsageError(`--routes: ${file} is not JSON: ${(err as Error).message}`);
    }
  }
  const manifest = loadManifests().find((m) => m.service === service);
  return manifest ? serviceContract({ service, url: 'http://x', manifest }).rest : null;
}

/** The contract the command sends: the checkout's files unless flags name others. */
export function contractFor(o: CliOptions): ServiceContract {
  const service = o.service!;
  const file = o.schema ?? schemaFile(service);
  return {
    service,
    url: (o.url ?? defaultServiceUrl(service)).replace(/\/+$/, ''),
    sdl: existsSync(file) ? readFileSync(file, 'utf8') : null,
    rest: restOf(service, o.routes),
  };
}

/** The registry's JSON answer, as far as this CLI reads it (which members depend on the command). */
interface RegistryAnswer {
  error?: string;
  ok?: boolean;
  report?: Report;
  unchanged?: boolean;
  version?: number;
  composition?: number;
  versions?: { version: number; createdAt: string; author: string; url: string; hash: string }[];
  services?: { service: string; version: number; publishedAt: string; author: string; url: string }[];
}

async function request(
  o: CliOptions,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<{ status: number; body: RegistryAnswer }> {
  const key = process.env.HALO_API_KEY;
  let res: Response;
  try {
    res = await fetch(`${o.registry}${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(key ? { 'x-api-key': key } : {}) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new Unreachable(`registry unreachable at ${o.registry}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
  }
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    parsed = { error: `not JSON (HTTP ${res.status})` };
  }
  return { status: res.status, body: parsed as RegistryAnswer };
}

interface Report {
  ok: boolean;
  composition: { errors: string[] };
  rest: { errors: string[] };
  changes: { path: string; message: string; breaking: boolean; acknowledged: boolean; usage: { count: number } }[];
  notes: string[];
}

function describeReport(r: Report | undefined): string[] {
  if (!r) return [];
  return [
    ...r.composition.errors.map((e) => `  composition: ${e}`),
    ...r.rest.errors.map((e) => `  REST: ${e}`),
    ...r.changes.map(
      (c) =>
        `  ${c.breaking ? (c.acknowledged ? 'BREAKING (acknowledged)' : 'BREAKING') : 'change'}: ${c.message}${c.breaking ? ` [used ${c.usage.count}×]` : ''}`,
    ),
    ...r.notes.map((n) => `  note: ${n}`),
  ];
}

/** Runs one command: what to print and the exit code. */
export async function runCli(o: CliOptions): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const refused = (status: number, body: RegistryAnswer | null) => {
    if (o.json) out.push(JSON.stringify(body, null, 2));
    err.push(`${o.service ?? 'subgraph'}: refused (${status}): ${body?.error ?? 'unknown error'}`, ...describeReport(body?.report));
    return { code: 1, out, err };
  };
  try {
    if (o.command === 'routes') {
      out.push(JSON.stringify(contractFor(o).rest, null, 2));
      return { code: 0, out, err };
    }
    if (o.command === 'list') {
      const res = await request(o, 'GET', o.service ? `/v1/services/${o.service}/versions` : '/v1/services');
      if (res.status !== 200) return refused(res.status, res.body);
      if (o.json) out.push(JSON.stringify(res.body, null, 2));
      else if (o.service)
        for (const v of res.body.versions!)
          out.push(`${o.service} v${v.version}  ${v.createdAt}  ${v.author}  ${v.url}  ${v.hash.slice(0, 12)}`);
      else for (const s of res.body.services!) out.push(`${s.service.padEnd(10)} v${s.version}  ${s.publishedAt}  ${s.author}  ${s.url}`);
      return { code: 0, out, err };
    }
    const ack = o.acknowledge ? { acknowledge: o.acknowledge } : {};
    const res =
      o.command === 'check'
        ? await request(o, 'POST', '/v1/check', { contract: contractFor(o) })
        : o.command === 'publish'
          ? await request(o, 'POST', '/v1/publish', { contract: contractFor(o), ...ack })
          : await request(o, 'POST', '/v1/rollback', { service: o.service, ...ack });
    if (o.command === 'check') {
      if (res.status !== 200) return refused(res.status, res.body);
      if (o.json) out.push(JSON.stringify(res.body, null, 2));
      const lines = [`${o.service}: check ${res.body.ok ? 'passed' : 'failed'}`, ...describeReport(res.body.report)];
      if (!o.json) (res.body.ok ? out : err).push(...lines);
      return { code: res.body.ok ? 0 : 1, out, err };
    }
    if (res.status !== 200 && res.status !== 201) return refused(res.status, res.body);
    if (o.json) out.push(JSON.stringify(res.body, null, 2));
    else if (res.body.unchanged) out.push(`${o.service}: unchanged (version ${res.body.version}, composition ${res.body.composition})`);
    else
      out.push(
        `${o.service}: ${o.command === 'rollback' ? 'rolled back as' : 'published'} version ${res.body.version} (composition ${res.body.composition})`,
        ...describeReport(res.body.report),
      );
    return { code: 0, out, err };
  } catch (e) {
    if (e instanceof Unreachable) return { code: 3, out, err: [e.message] };
    if (e instanceof UsageError) return { code: 2, out, err: [`subgraph: ${e.message}`] };
    throw e;
  }
}

async function main(): Promise<void> {
  let options: CliOptions;
  try {
    options = parseCli(process.argv.slice(2));
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`subgraph: ${e.message}\n${USAGE}\n`);
    process.exit(2);
  }
  const { code, out, err } = await runCli(options);
  if (out.length) process.stdout.write(`${out.join('\n')}\n`);
  if (err.length) process.stderr.write(`${err.join('\n')}\n`);
  process.exitCode = code;
}

if (require.main === module) {
  main().catch((e: unknown) => {
    process.stderr.write(`subgraph: ${(e as Error).message}\n`);
    process.exit(1);
  });
}
