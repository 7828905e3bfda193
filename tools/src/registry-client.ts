import type { ErrorAnswer } from '@halo/contracts/wire';
import { SERVICES } from '@halo/kit/config';
import { SERVICE_TOKEN_HEADER } from '@halo/kit/contract';
import { developerToken } from './dev-credentials';

/**
 * What the registry CLIs share (`npm run subgraph`, tools/src/subgraph.ts; `npm run operations`,
 * tools/src/operations.ts): where the registry is, the credentials sent to it, one request, and the
 * exit codes: 0 ok, 1 refused, 2 usage error, 3 registry unreachable.
 */

/** A wrong command line or input file: exit 2, before any request. */
export class UsageError extends Error {}
/** The registry did not answer: exit 3. */
export class Unreachable extends Error {}

export type Env = Record<string, string | undefined>;

export interface CliResult {
  code: number;
  out: string[];
  err: string[];
}

/** The port offset `npm start` was given (HALO_PORT_OFFSET): the registry and the services move with it. */
export function portOffset(env: Env): number {
  const raw = env.HALO_PORT_OFFSET ?? '0';
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 50_000) throw new UsageError(`HALO_PORT_OFFSET must be an integer from 0 to 50000 (got ${raw})`);
  return n;
}

/** A flag that must be an http(s) URL, when given. */
export function checkHttpUrl(flag: string, value: string | undefined): void {
  if (value !== undefined && !/^https?:\/\/[^\s]+$/.test(value)) throw new UsageError(`--${flag} must be an http(s) URL`);
}

/** `--registry`, else REGISTRY_URL, else the registry npm start runs (moved by the port offset). */
export const registryUrl = (flag: string | undefined, env: Env, offset: number): string =>
  (flag ?? env.REGISTRY_URL ?? `http://127.0.0.1:${SERVICES.registry.httpPort + offset}`).replace(/\/+$/, '');

/** HALO_API_KEY if set; else, against this checkout's npm start, the developer token it left for us. */
async function credentials(registry: string): Promise<Record<string, string>> {
  const key = process.env.HALO_API_KEY;
  if (key) return { 'x-api-key': key };
  const token = await developerToken(registry);
  return token ? { [SERVICE_TOKEN_HEADER]: token } : {};
}

/** The scope a CLI's writes need: `schema:write` for a service, `operations:write` for a client. */
export interface WriteScope {
  scope: string;
  subject: string;
}

/** What to do about a 401 or a 403, in one line after the registry's own answer. */
export function credentialsHint(status: number, { scope, subject }: WriteScope): string[] {
  if (status === 401) {
    return process.env.HALO_API_KEY
      ? ['  HALO_API_KEY was not accepted: an admin API key (POST /auth/api-keys) of this Halo, not revoked']
      : [
          `  set HALO_API_KEY (an admin API key with scope ${scope}), or run this against this checkout's npm start, which hands this CLI its developer key`,
        ];
  }
  if (status === 403 && process.env.HALO_API_KEY) {
    return [`  HALO_API_KEY's scopes do not cover this ${subject}: it needs ${scope}, or ${scope}:<${subject}>`];
  }
  return [];
}

/** One request to the registry, with the credentials; its status and JSON answer (typed by the caller). */
export async function request<T>(
  o: { registry: string },
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  let res: Response;
  try {
    res = await fetch(`${o.registry}${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(await credentials(o.registry)) },
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
  return { status: res.status, body: parsed as T };
}

/**
 * A registry answer as a CLI reads it: a 200 or 201 as `T`, anything else as the refusal `E` (the
 * shapes are @halo/contracts/wire's). `check`, when given, validates a 200 or 201 first (throwing
 * `unreadable answer`); the body is kept as sent, so `--json` prints what the registry said.
 */
export type Answer<T, E extends ErrorAnswer = ErrorAnswer> = { ok: true; status: number; body: T } | { ok: false; status: number; body: E };

export async function answer<T, E extends ErrorAnswer = ErrorAnswer>(
  o: { registry: string },
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  check?: (json: unknown) => unknown,
): Promise<Answer<T, E>> {
  const res = await request<unknown>(o, method, path, body);
  if (res.status !== 200 && res.status !== 201) return { ok: false, status: res.status, body: res.body as E };
  try {
    check?.(res.body);
  } catch (err) {
    throw new Error(`unreadable answer from ${method} ${path.replace(/\?.*$/, '')} (HTTP ${res.status}): ${(err as Error).message}`);
  }
  return { ok: true, status: res.status, body: res.body as T };
}

/** A run's failure as a result: unreachable exits 3, a usage error 2 (named for the CLI); anything else is thrown on. */
export function failure(e: unknown, name: string, out: string[]): CliResult {
  if (e instanceof Unreachable) return { code: 3, out, err: [e.message] };
  if (e instanceof UsageError) return { code: 2, out, err: [`${name}: ${e.message}`] };
  throw e;
}

/** A CLI's main: parse (a usage error prints the usage, exit 2), run, print, exit with the run's code. */
export async function cliMain<O>(name: string, usage: string, parse: (argv: string[]) => O, run: (o: O) => Promise<CliResult>) {
  let options: O;
  try {
    options = parse(process.argv.slice(2));
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`${name}: ${e.message}\n${usage}\n`);
    process.exit(2);
  }
  const { code, out, err } = await run(options);
  if (out.length) process.stdout.write(`${out.join('\n')}\n`);
  if (err.length) process.stderr.write(`${err.join('\n')}\n`);
  process.exitCode = code;
}

/** Runs `main` when the file is the entry point; an unexpected error exits 1 with one line. */
export function runMain(name: string, main: () => Promise<void>): void {
  main().catch((e: unknown) => {
    process.stderr.write(`${name}: ${(e as Error).message}\n`);
    process.exit(1);
  });
}
