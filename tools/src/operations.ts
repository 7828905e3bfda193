import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import {
  ClientsAnswer,
  ClientVersionAnswer,
  parseWire,
  PushAnswer,
  RetireAnswer,
  type PushRefusedAnswer,
  type PushRequest,
  type RetireRequest,
  type WireSchema,
} from '@halo/contracts/wire';
import { ManifestError, parseManifestText, type ManifestOperation } from './operation-manifests';
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
  type Answer,
  type CliResult,
  type Env,
} from './registry-client';

/**
 * `npm run operations -- <command> --client NAME …`: a client team's CLI for the operations an app
 * version sends (docs/registry.md, "Registering client operations"). Exit 0 ok, 1 refused, 2 usage
 * error, 3 registry unreachable; the registry and the credentials as for `npm run subgraph`.
 */
export const USAGE = `Usage: npm run operations -- <command> [options]
  push    register the operations an app version sends: --client NAME --version V MANIFEST_FILE
  list    the clients' versions and their operation counts: [--client NAME];
          one version's operations: --client NAME --version V
  retire  mark an app version retired: --client NAME --version V
Options: [--registry URL] [--json]
  MANIFEST_FILE  Apollo's persisted query manifest, Relay's persisted_queries.json, or GraphQL Code
                 Generator's persisted-documents.json (detected by its shape)
  --registry     default REGISTRY_URL, else the registry npm start runs (HALO_PORT_OFFSET moves it)
Credentials: HALO_API_KEY (an admin key with scope operations:write, or operations:write:<client>);
  against this checkout's npm start, none: it hands this CLI a developer key.`;

const COMMANDS = ['push', 'list', 'retire'] as const;
type Command = (typeof COMMANDS)[number];

export interface OperationsCliOptions {
  command: Command;
  client?: string;
  version?: string;
  /** push: the manifest file. */
  manifest?: string;
  registry: string;
  json: boolean;
}

const SCOPE = { scope: 'operations:write', subject: 'client' };

function nonEmpty(flag: string, value: string | undefined): string | undefined {
  if (value !== undefined && value.trim() === '') throw new UsageError(`--${flag} must not be empty`);
  return value?.trim();
}

/** The command line, checked: a UsageError (exit 2) names what is wrong. */
export function parseOperationsCli(argv: readonly string[], env: Env = process.env): OperationsCliOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        client: { type: 'string' },
        version: { type: 'string' },
        registry: { type: 'string' },
        json: { type: 'boolean', default: false },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values, positionals } = parsed;
  const [command, ...files] = positionals;
  if (!command) throw new UsageError('a command is required');
  if (!(COMMANDS as readonly string[]).includes(command)) throw new UsageError(`unknown command: ${command}`);
  const client = nonEmpty('client', values.client);
  const version = nonEmpty('version', values.version);
  if (command !== 'list' && (client === undefined || version === undefined)) {
    throw new UsageError(`${command} needs --client NAME --version V`);
  }
  if (command === 'list' && version !== undefined && client === undefined) throw new UsageError('list --version V needs --client NAME');
  if (command === 'push' && files.length !== 1)
    throw new UsageError(files.length === 0 ? 'push needs a manifest file' : 'push takes one manifest file');
  if (command !== 'push' && files.length > 0) throw new UsageError(`unexpected argument: ${files[0]}`);
  const manifest = files[0];
  if (manifest !== undefined && !existsSync(manifest)) throw new UsageError(`no such file: ${manifest}`);
  checkHttpUrl('registry', values.registry);
  return {
    command: command as Command,
    ...(client !== undefined ? { client } : {}),
    ...(version !== undefined ? { version } : {}),
    ...(manifest !== undefined ? { manifest } : {}),
    registry: registryUrl(values.registry, env, portOffset(env)),
    json: values.json,
  };
}

/** The manifest file's operations; a file that is no manifest is a usage error (exit 2, nothing sent). */
function readManifest(file: string): ManifestOperation[] {
  try {
    return parseManifestText(readFileSync(file, 'utf8'));
  } catch (err) {
    if (err instanceof ManifestError) throw new UsageError(`${file}: ${err.message}`);
    throw err;
  }
}

const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;

/** Columns padded to their widest cell, two spaces apart. */
function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  '));
}

function describeClients(clients: ClientsAnswer['clients']): string[] {
  if (clients.length === 0) return ['no client has registered operations'];
  return table([
    ['client', 'version', 'operations', 'pushed', 'by', 'retired'],
    ...clients.map((c) => [c.client, c.version, String(c.operations), c.pushedAt, c.pushedBy, c.retiredAt ?? '-']),
  ]);
}

function describeVersion(body: ClientVersionAnswer): string[] {
  const { operations } = body;
  const retired = body.retiredAt ? `, retired at ${body.retiredAt}` : '';
  return [
    `${body.client} ${body.version}: ${plural(operations.length, 'operation')}, pushed at ${body.pushedAt} by ${body.pushedBy}${retired}`,
    ...operations.map((op) => `  ${op.id}  ${op.name || '(anonymous)'}`),
  ];
}

function describePush(o: OperationsCliOptions, body: PushAnswer): string {
  const count = body.operations;
  if (body.unchanged) return `${o.client} ${o.version}: unchanged (${plural(count, 'operation')})`;
  return `${o.client} ${o.version}: ${plural(count, 'operation')} registered (${body.added} added, ${body.removed} removed)`;
}

/** A 200 or 201 read by `schema` (else `unreadable answer`), anything else as the registry's refusal. */
const call = <T>(
  o: OperationsCliOptions,
  schema: WireSchema<T>,
  method: 'GET' | 'POST',
  path: string,
  body?: PushRequest | RetireRequest,
) => answer<T, PushRefusedAnswer>(o, method, path, body, (json) => parseWire(schema, json));

/** Runs one command's request; what it prints on success. */
async function run(o: OperationsCliOptions): Promise<Answer<string[], PushRefusedAnswer>> {
  const ok = <T>(res: Answer<T, PushRefusedAnswer>, describe: (body: T) => string[]): Answer<string[], PushRefusedAnswer> =>
    res.ok ? { ...res, body: o.json ? [JSON.stringify(res.body, null, 2)] : describe(res.body) } : res;
  const target = `${encodeURIComponent(o.client ?? '')}/${encodeURIComponent(o.version ?? '')}`;
  const clientVersion = { client: o.client!, version: o.version! };
  if (o.command === 'push') {
    const operations = readManifest(o.manifest!);
    const res = await call(o, PushAnswer, 'POST', '/v1/operations', { ...clientVersion, operations });
    return ok(res, (body) => [describePush(o, body)]);
  }
  if (o.command === 'retire') {
    const res = await call(o, RetireAnswer, 'POST', '/v1/operations/retire', clientVersion);
    return ok(res, (body) => [`${o.client} ${o.version}: retired at ${body.retiredAt}`]);
  }
  if (o.version !== undefined) return ok(await call(o, ClientVersionAnswer, 'GET', `/v1/operations/${target}`), describeVersion);
  const query = o.client ? `?client=${encodeURIComponent(o.client)}` : '';
  return ok(await call(o, ClientsAnswer, 'GET', `/v1/operations${query}`), (body) => describeClients(body.clients));
}

/** Runs one command: what to print and the exit code. */
export async function runOperationsCli(o: OperationsCliOptions): Promise<CliResult> {
  const out: string[] = [];
  const err: string[] = [];
  try {
    const res = await run(o);
    if (!res.ok) {
      if (o.json) out.push(JSON.stringify(res.body, null, 2));
      const who = o.client ? `${o.client}${o.version ? ` ${o.version}` : ''}` : 'operations';
      err.push(
        `${who}: refused (${res.status}): ${res.body.error ?? 'unknown error'}`,
        ...credentialsHint(res.status, SCOPE),
        ...(res.body.refused ?? []).map((r) => `refused  ${r.name || r.id}: ${r.reason}`),
      );
      return { code: 1, out, err };
    }
    out.push(...res.body);
    return { code: 0, out, err };
  } catch (e) {
    return failure(e, 'operations', out);
  }
}

if (require.main === module) runMain('operations', () => cliMain('operations', USAGE, parseOperationsCli, runOperationsCli));
