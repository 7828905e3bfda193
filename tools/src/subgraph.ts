import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { EDGE_SERVICE_NAMES, isEdgeService, SERVICES, type EdgeServiceName } from '@halo/kit/config';
import { serviceContract, type ServiceContract } from '@halo/kit/contract';
import type { RestPart } from '@halo/kit/rest';
import { isTakeoverChange } from '@halo/contracts';
import {
  CheckAnswer,
  DiffAnswer,
  parseWire,
  PublishAnswer,
  ServicesAnswer,
  VersionAnswer,
  VersionsAnswer,
  type CheckReport,
  type CheckRequest,
  type RefusedAnswer,
  type RollbackRequest,
  type WireSchema,
} from '@halo/contracts/wire';
import { schemaFile } from './checkout-contracts';
import { loadManifests } from './compose-rest';
import {
  answer,
  checkHttpUrl,
  cliMain,
  credentialsHint,
  failure,
  portOffset,
  registryUrl,
  runMain,
  UsageError,
  type CliResult,
} from './registry-client';

export { UsageError };

/**
 * `npm run subgraph -- <command> --service NAME …`: a service team's CLI for the schema registry
 * (docs/registry.md, "CLI"). Exit 0 ok, 1 check failed or refused, 2 usage error, 3 registry
 * unreachable. Defaults reach the system `npm start` runs (HALO_PORT_OFFSET included).
 */
export const USAGE = `Usage: npm run subgraph -- <command> --service NAME [options]
  check     compose this contract with every other service's current one, report changes and their usage
  publish   check, then make it the service's current version (the gateways pick it up)
  list      the services' current versions
  log       the service's history: each version, when, who, what it changed, its acknowledgement
  fetch     one version's contract: --version N (its SDL; with --json, the whole contract)
  diff      what changes between two versions: --from N --to M (the check's change list, then a text diff)
  rollback  republish an earlier version's contract as a new version, after the same checks: --to N
  routes    print the service's REST part (for --routes FILE)
Options: [--schema FILE] [--routes FILE] [--url URL] [--registry URL] [--acknowledge "<reason>"] [--json]
  check, publish, rollback: [--window DAYS] [--threshold PERCENT] [--exclude-client NAME]…
  --window         usage in this many days counts (default: the registry's, 7)
  --threshold      a breaking change used by at most this % of requests passes (default 0: any use blocks)
  --exclude-client this client's usage never blocks (repeatable)
  --url      the routing URL to publish (default: the one the registry holds, else this machine's)
  --registry default REGISTRY_URL, else the registry npm start runs (HALO_PORT_OFFSET moves it)
Credentials: HALO_API_KEY (an admin key with scope schema:write, or schema:write:<service>); against this
  checkout's npm start, none: it hands this CLI a developer key (reads and checks need none there).`;

const COMMANDS = ['check', 'publish', 'list', 'log', 'fetch', 'diff', 'rollback', 'routes'] as const;
type Command = (typeof COMMANDS)[number];

export interface CliOptions {
  command: Command;
  service?: EdgeServiceName;
  schema?: string;
  routes?: string;
  url?: string;
  registry: string;
  acknowledge?: string;
  /** The check's options (check, publish, rollback); unset: the registry's defaults. */
  options?: { windowDays?: number; thresholdPercent?: number; excludeClients?: string[] };
  /** HALO_PORT_OFFSET: where this machine's services listen. */
  offset: number;
  /** fetch: the version; rollback: the target; diff: from and to. */
  version?: number;
  from?: number;
  to?: number;
  json: boolean;
}

function checkOptions(
  command: string,
  window: string | undefined,
  threshold: string | undefined,
  exclude: string[] | undefined,
): CliOptions['options'] {
  if (window === undefined && threshold === undefined && exclude === undefined) return undefined;
  if (!['check', 'publish', 'rollback'].includes(command)) {
    throw new UsageError('--window, --threshold and --exclude-client go with check, publish or rollback');
  }
  if (window !== undefined && !/^[1-9]\d{0,3}$/.test(window)) throw new UsageError(`--window must be a number of days (got ${window})`);
  const percent = threshold === undefined ? undefined : Number(threshold);
  if (percent !== undefined && (!/^\d+(\.\d+)?$/.test(threshold!) || percent > 100)) {
    throw new UsageError(`--threshold must be a percentage from 0 to 100 (got ${threshold})`);
  }
  return {
    ...(window !== undefined ? { windowDays: Number(window) } : {}),
    ...(percent !== undefined ? { thresholdPercent: percent } : {}),
    ...(exclude !== undefined ? { excludeClients: exclude } : {}),
  };
}

function versionFlag(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9]\d{0,8}$/.test(value)) throw new UsageError(`--${name} must be a version number (got ${value})`);
  return Number(value);
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
        version: { type: 'string' },
        window: { type: 'string' },
        threshold: { type: 'string' },
        'exclude-client': { type: 'string', multiple: true },
        from: { type: 'string' },
        to: { type: 'string' },
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
  for (const flag of ['url', 'registry'] as const) checkHttpUrl(flag, values[flag]);
  for (const flag of ['schema', 'routes'] as const) {
    const v = values[flag];
    if (v !== undefined && !existsSync(v)) throw new UsageError(`--${flag}: no such file: ${v}`);
  }
  const version = versionFlag('version', values.version);
  const from = versionFlag('from', values.from);
  const to = versionFlag('to', values.to);
  if (command === 'fetch' && version === undefined) throw new UsageError('fetch needs --version N (see log)');
  if (command === 'diff' && (from === undefined || to === undefined)) throw new UsageError('diff needs --from N --to M (see log)');
  if (command === 'rollback' && to === undefined) throw new UsageError('rollback needs --to N: the version to roll back to (see log)');
  const options = checkOptions(command, values.window, values.threshold, values['exclude-client']);
  const offset = portOffset(env);
  const registry = registryUrl(values.registry, env, offset);
  return {
    command: command as Command,
    ...(service ? { service } : {}),
    ...(values.schema ? { schema: values.schema } : {}),
    ...(values.routes ? { routes: values.routes } : {}),
    ...(values.url ? { url: values.url } : {}),
    registry,
    ...(values.acknowledge ? { acknowledge: values.acknowledge.trim() } : {}),
    ...(version !== undefined ? { version } : {}),
    ...(from !== undefined ? { from } : {}),
    ...(to !== undefined ? { to } : {}),
    offset,
    ...(options ? { options } : {}),
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

/**
 * The contract the command sends: the checkout's files unless flags name others. The routing URL
 * is `--url`, else the one the registry holds for the service (a publish from a laptop must not
 * move production's traffic), else this machine's (the offset applied).
 */
export function contractFor(o: CliOptions, registeredUrl?: string): ServiceContract {
  const service = o.service!;
  const file = o.schema ?? schemaFile(service);
  const local = `http://127.0.0.1:${SERVICES[service].httpPort + o.offset}`;
  return {
    service,
    url: (o.url ?? registeredUrl ?? local).replace(/\/+$/, ''),
    sdl: existsSync(file) ? readFileSync(file, 'utf8') : null,
    rest: restOf(service, o.routes),
  };
}

/** A request whose 200 or 201 this CLI reads with `schema` (the wire's, as the registry declares it), anything else as a refusal. */
const request = <T>(o: CliOptions, schema: WireSchema<T>, method: 'GET' | 'POST', path: string, body?: CheckRequest | RollbackRequest) =>
  answer<T, RefusedAnswer>(o, method, path, body, (json) => parseWire(schema, json));

type Report = Pick<CheckReport, 'ok' | 'composition' | 'rest' | 'changes' | 'notes'>;

/** How much a breaking change is used: gateways record GraphQL usage only, so a REST change's is unknown. */
const usedNote = (c: Report['changes'][number]) =>
  isTakeoverChange(c) ? '' : c.type.startsWith('REST_') ? ' [REST calls are not recorded: usage unknown]' : ` [used ${c.usage.count}×]`;

/** A change's label: a takeover of another service's field is not breaking for clients, but it needs an acknowledgement all the same. */
function changeLabel(c: { type: string; breaking: boolean; acknowledged?: boolean }): string {
  if (!c.breaking) return 'change';
  const kind = isTakeoverChange(c) ? 'TAKEOVER' : 'BREAKING';
  return c.acknowledged ? `${kind} (acknowledged)` : kind;
}

function describeReport(r: Report | undefined): string[] {
  if (!r) return [];
  return [
    ...r.composition.errors.map((e) => `  composition: ${e}`),
    ...r.rest.errors.map((e) => `  REST: ${e}`),
    ...r.changes.map((c) => `  ${changeLabel(c)}: ${c.message}${c.breaking ? usedNote(c) : ''}`),
    ...r.notes.map((n) => `  note: ${n}`),
  ];
}

/** The routing URL the registry holds for the service now, if it holds one. */
async function currentUrl(o: CliOptions): Promise<string | undefined> {
  const res = await request(o, ServicesAnswer, 'GET', '/v1/services');
  if (!res.ok) return undefined;
  return res.body.services?.find((s) => s.service === o.service)?.url;
}

/** `list --service` (one line a version) and `log` (each version's changes and acknowledgement too). */
function describeHistory(service: string, versions: VersionsAnswer['versions'], full: boolean): string[] {
  const lines: string[] = [];
  for (const v of versions) {
    const rollback = v.rollbackOf ? `  (rollback to v${v.rollbackOf})` : '';
    lines.push(`${service} v${v.version}  ${v.createdAt}  ${v.author}  ${v.url}  ${v.hash.slice(0, 12)}${rollback}`);
    if (!full) continue;
    if (v.acknowledgement) lines.push(`  acknowledged: ${v.acknowledgement}`);
    if (v.changes === null) lines.push('  (changes not recorded: published before the registry kept them)');
    else if (v.changes.length === 0) lines.push('  no change to the API');
    for (const c of v.changes ?? []) {
      lines.push(`  ${changeLabel(c)}: ${c.message}`);
    }
  }
  return lines;
}

/** Runs one command: what to print and the exit code. */
export async function runCli(o: CliOptions): Promise<CliResult> {
  const out: string[] = [];
  const err: string[] = [];
  const refused = ({ status, body }: { status: number; body: RefusedAnswer | null }) => {
    if (o.json) out.push(JSON.stringify(body, null, 2));
    err.push(
      `${o.service ?? 'subgraph'}: refused (${status}): ${body?.error ?? 'unknown error'}`,
      ...credentialsHint(status, { scope: 'schema:write', subject: 'service' }),
      ...describeReport(body?.report),
    );
    return { code: 1, out, err };
  };
  try {
    if (o.command === 'routes') {
      out.push(JSON.stringify(contractFor(o).rest, null, 2));
      return { code: 0, out, err };
    }
    if (o.command === 'list' || o.command === 'log') {
      const res = o.service
        ? await request(o, VersionsAnswer, 'GET', `/v1/services/${o.service}/versions`)
        : await request(o, ServicesAnswer, 'GET', '/v1/services');
      if (!res.ok) return refused(res);
      if (o.json) out.push(JSON.stringify(res.body, null, 2));
      else if ('versions' in res.body) out.push(...describeHistory(o.service!, res.body.versions, o.command === 'log'));
      else for (const s of res.body.services) out.push(`${s.service.padEnd(10)} v${s.version}  ${s.publishedAt}  ${s.author}  ${s.url}`);
      return { code: 0, out, err };
    }
    if (o.command === 'fetch') {
      const res = await request(o, VersionAnswer, 'GET', `/v1/services/${o.service}/versions/${o.version}`);
      if (!res.ok) return refused(res);
      if (o.json) out.push(JSON.stringify(res.body, null, 2));
      else out.push((res.body.contract?.sdl ?? `# ${o.service} v${o.version} has no GraphQL schema`).replace(/\n$/, ''));
      return { code: 0, out, err };
    }
    if (o.command === 'diff') {
      const res = await request(o, DiffAnswer, 'GET', `/v1/services/${o.service}/diff?from=${o.from}&to=${o.to}`);
      if (!res.ok) return refused(res);
      if (o.json) out.push(JSON.stringify(res.body, null, 2));
      else {
        out.push(`${o.service}: v${o.from} → v${o.to}`);
        for (const e of res.body.errors ?? []) out.push(`  ${e}`);
        for (const c of res.body.changes ?? []) out.push(`  ${changeLabel(c)}: ${c.message}`);
        if ((res.body.changes ?? []).length === 0 && (res.body.errors ?? []).length === 0) out.push('  no change to the API');
        out.push('', (res.body.text ?? '').replace(/\n$/, ''));
      }
      return { code: 0, out, err };
    }
    const ack = { ...(o.acknowledge ? { acknowledge: o.acknowledge } : {}), ...(o.options ? { options: o.options } : {}) };
    const registeredUrl = o.url === undefined && o.command !== 'rollback' ? await currentUrl(o) : undefined;
    if (o.command === 'check') {
      const res = await request(o, CheckAnswer, 'POST', '/v1/check', { contract: contractFor(o, registeredUrl), ...ack });
      if (!res.ok) return refused(res);
      if (o.json) out.push(JSON.stringify(res.body, null, 2));
      const lines = [`${o.service}: check ${res.body.ok ? 'passed' : 'failed'}`, ...describeReport(res.body.report)];
      if (!o.json) (res.body.ok ? out : err).push(...lines);
      return { code: res.body.ok ? 0 : 1, out, err };
    }
    const res =
      o.command === 'publish'
        ? await request(o, PublishAnswer, 'POST', '/v1/publish', { contract: contractFor(o, registeredUrl), ...ack })
        : await request(o, PublishAnswer, 'POST', '/v1/rollback', { service: o.service!, to: o.to!, ...ack });
    if (!res.ok) return refused(res);
    if (o.json) out.push(JSON.stringify(res.body, null, 2));
    else if (res.body.unchanged) out.push(`${o.service}: unchanged (version ${res.body.version}, composition ${res.body.composition})`);
    else
      out.push(
        `${o.service}: ${o.command === 'rollback' ? `v${o.to} republished as` : 'published'} version ${res.body.version} (composition ${res.body.composition})`,
        ...describeReport(res.body.report),
      );
    return { code: 0, out, err };
  } catch (e) {
    return failure(e, 'subgraph', out);
  }
}

if (require.main === module) runMain('subgraph', () => cliMain('subgraph', USAGE, parseCli, runCli));
