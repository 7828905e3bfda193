import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ManifestError, parseManifestText, type ManifestOperation } from './operation-manifests';
import {
  checkHttpUrl,
  cliMain,
  credentialsHint,
  failure,
  portOffset,
  registryUrl,
  request,
  runMain,
  UsageError,
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

/** The registry's answers, as far as this CLI reads them (which members depend on the command). */
interface OperationsAnswer {
  error?: string;
  refused?: { id: string; name: string; reason: string }[];
  client?: string;
  version?: string;
  operations?: number | { id: string; name: string; body: string }[];
  added?: number;
  removed?: number;
  unchanged?: boolean;
  pushedAt?: string;
  pushedBy?: string;
  retiredAt?: string | null;
  clients?: { client: string; version: string; operations: number; pushedAt: string; pushedBy: string; retiredAt: string | null }[];
}

const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;

/** Columns padded to their widest cell, two spaces apart. */
function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  '));
}

function describeClients(clients: NonNullable<OperationsAnswer['clients']>): string[] {
  if (clients.length === 0) return ['no client has registered operations'];
  return table([
    ['client', 'version', 'operations', 'pushed', 'by', 'retired'],
    ...clients.map((c) => [c.client, c.version, String(c.operations), c.pushedAt, c.pushedBy, c.retiredAt ?? '-']),
  ]);
}

function describeVersion(body: OperationsAnswer): string[] {
  const operations = Array.isArray(body.operations) ? body.operations : [];
  const retired = body.retiredAt ? `, retired at ${body.retiredAt}` : '';
  return [
    `${body.client} ${body.version}: ${plural(operations.length, 'operation')}, pushed at ${body.pushedAt} by ${body.pushedBy}${retired}`,
    ...operations.map((op) => `  ${op.id}  ${op.name || '(anonymous)'}`),
  ];
}

function describePush(o: OperationsCliOptions, body: OperationsAnswer): string {
  const count = typeof body.operations === 'number' ? body.operations : 0;
  if (body.unchanged) return `${o.client} ${o.version}: unchanged (${plural(count, 'operation')})`;
  return `${o.client} ${o.version}: ${plural(count, 'operation')} registered (${body.added ?? 0} added, ${body.removed ?? 0} removed)`;
}

/** The request a command makes. */
function call(o: OperationsCliOptions) {
  const target = `${encodeURIComponent(o.client ?? '')}/${encodeURIComponent(o.version ?? '')}`;
  if (o.command === 'push') {
    const operations = readManifest(o.manifest!);
    return request<OperationsAnswer>(o, 'POST', '/v1/operations', { client: o.client, version: o.version, operations });
  }
  if (o.command === 'retire')
    return request<OperationsAnswer>(o, 'POST', '/v1/operations/retire', { client: o.client, version: o.version });
  if (o.version !== undefined) return request<OperationsAnswer>(o, 'GET', `/v1/operations/${target}`);
  return request<OperationsAnswer>(o, 'GET', `/v1/operations${o.client ? `?client=${encodeURIComponent(o.client)}` : ''}`);
}

/** Runs one command: what to print and the exit code. */
export async function runOperationsCli(o: OperationsCliOptions): Promise<CliResult> {
  const out: string[] = [];
  const err: string[] = [];
  try {
    const res = await call(o);
    if (res.status !== 200 && res.status !== 201) {
      if (o.json) out.push(JSON.stringify(res.body, null, 2));
      const who = o.client ? `${o.client}${o.version ? ` ${o.version}` : ''}` : 'operations';
      err.push(
        `${who}: refused (${res.status}): ${res.body.error ?? 'unknown error'}`,
        ...credentialsHint(res.status, SCOPE),
        ...(res.body.refused ?? []).map((r) => `refused  ${r.name || r.id}: ${r.reason}`),
      );
      return { code: 1, out, err };
    }
    if (o.json) out.push(JSON.stringify(res.body, null, 2));
    else if (o.command === 'push') out.push(describePush(o, res.body));
    else if (o.command === 'retire') out.push(`${o.client} ${o.version}: retired at ${res.body.retiredAt}`);
    else if (o.version !== undefined) out.push(...describeVersion(res.body));
    else out.push(...describeClients(res.body.clients ?? []));
    return { code: 0, out, err };
  } catch (e) {
    return failure(e, 'operations', out);
  }
}

if (require.main === module) runMain('operations', () => cliMain('operations', USAGE, parseOperationsCli, runOperationsCli));
