import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as sdk from '@halo/client';
import * as sse from '@halo/client/sse';
import ts from 'typescript';
import WebSocket from 'ws';
import { startE2ESystem } from './helpers';

/**
 * The SDK's README (packages/client/README.md) and the root README's SDK example, run as written
 * against the real system: every ```ts block is compiled as is and run in order. The only changes
 * are the example addresses (`http://127.0.0.1:4000`, `https://api.example.com`), which become the
 * test gateway's. Names a block uses without defining are what its surrounding text says they
 * are: `halo` (a client signed in as alice, as after the quick start), `NEW_MESSAGE` (the
 * subscription of "Subscriptions"), and the app's own `showLogin`, `myTimers`, `clock`.
 */
let sys: Awaited<ReturnType<typeof startE2ESystem>>;
const clients: sdk.HaloClient[] = [];

beforeAll(async () => {
  sys = await startE2ESystem({ postgres: true });
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await sys?.stop();
});

const ROOT = join(__dirname, '..');

function tsBlocks(file: string, after = ''): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  return [...text.slice(text.indexOf(after)).matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

/** The createHaloClient that blocks import: the real one, remembering each client to close it. */
function createHaloClient(opts?: sdk.HaloClientOptions): sdk.HaloClient {
  const client = sdk.createHaloClient({ ...opts, subscriptions: { webSocketImpl: WebSocket, ...opts?.subscriptions } });
  clients.push(client);
  return client;
}

interface Run {
  logs: unknown[][];
  errors: unknown[][];
  showLogin: jest.Mock;
}

/** Compiles one block (TypeScript → CommonJS, types stripped) and runs it with top-level await. */
async function runBlock(source: string, scope: Record<string, unknown>): Promise<Run> {
  const code = source.replaceAll('http://127.0.0.1:4000', sys.url).replaceAll('https://api.example.com', sys.url);
  const js = ts.transpileModule(code, {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
  });
  const run: Run = { logs: [], errors: [], showLogin: jest.fn() };
  const modules: Record<string, unknown> = { '@halo/client': { ...sdk, createHaloClient }, '@halo/client/sse': sse, ws: WebSocket };
  const given: Record<string, unknown> = {
    ...scope,
    showLogin: run.showLogin,
    console: { log: (...args: unknown[]) => run.logs.push(args), error: (...args: unknown[]) => run.errors.push(args) },
    require: (name: string) => modules[name] ?? fail(`the README imports ${name}`),
    exports: {},
  };
  // A block's own declarations win over what the scope offers.
  const names = Object.keys(given).filter((name) => !new RegExp(`\\b(const|let|var)\\s+${name}\\b`).test(code));
  const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (
    ...args: string[]
  ) => (...values: unknown[]) => Promise<void>;
  try {
    await new AsyncFunction(...names, js.outputText)(...names.map((name) => given[name]));
  } catch (err) {
    throw new Error(`the README example starting "${source.split('\n')[0]}" failed: ${String(err)}`, { cause: err });
  }
  return run;
}

function fail(message: string): never {
  throw new Error(message);
}

it('packages/client/README.md: every example runs against the real system and prints what its comments say', async () => {
  const blocks = tsBlocks('packages/client/README.md');
  expect(blocks.length).toBeGreaterThanOrEqual(6);
  const halo = createHaloClient({ baseUrl: sys.url });
  await halo.auth.login({ email: 'alice@halo.local', password: 'password123' });
  const subscriptions = blocks.find((b) => b.includes('const NEW_MESSAGE')) ?? fail('no NEW_MESSAGE in the README');
  const NEW_MESSAGE = /const NEW_MESSAGE = '([^']+)'/.exec(subscriptions)?.[1] ?? fail('NEW_MESSAGE is not a plain string');
  const scope = {
    halo,
    NEW_MESSAGE,
    myTimers: { wait: (ms: number) => new Promise((ok) => setTimeout(ok, ms)) },
    clock: { now: () => Date.now() },
  };

  const runs: Run[] = [];
  for (const block of blocks) runs.push(await runBlock(block, scope));

  const [quickStart, browser, , graphql] = runs;
  expect(quickStart!.logs).toEqual([[404, 'Not found', expect.stringMatching(/^req-|^[0-9a-f-]{36}$/)]]);
  expect(browser!.showLogin).toHaveBeenCalledTimes(1); // no refresh cookie in a fresh client
  expect(graphql!.logs).toEqual([[['NOT_FOUND'], { user: null }]]);
  const manifest = runs[blocks.findIndex((b) => b.includes('persistedQueryManifest('))];
  expect(manifest!.logs).toEqual([['Product']]);
  expect(runs.flatMap((r) => r.errors)).toEqual([]);
}, 60_000);

it("README.md: the SDK example of 'Call it' runs against the real system", async () => {
  const [block] = tsBlocks('README.md', '### From TypeScript: `@halo/client`');
  const run = await runBlock(block!, {});
  expect(run.errors).toEqual([]);
}, 30_000);
