import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';

/**
 * What a web app bundles, as a bundler sees the package (`@halo/client` through its `exports`
 * map, the built dist/): a page on the WebSocket transport must bundle nothing of graphql-sse nor
 * the `graphql` package (graphql-sse's entry loads its server too, which needs it); those come
 * only with `@halo/client/sse`. The sizes are in the package's README.
 */
const run = promisify(execFile);
const PACKAGE_DIR = join(__dirname, '..');

const WEBSOCKET_PAGE = `import { createHaloClient } from '@halo/client';
const halo = createHaloClient({ baseUrl: location.origin });
halo.graphql.subscribe('subscription { newMessage(chatId: "1") { id } }', {}, { next: console.log, error: console.error });`;

const SSE_PAGE = `import { createHaloClient } from '@halo/client';
import { sseTransport } from '@halo/client/sse';
const halo = createHaloClient({ baseUrl: location.origin, subscriptions: { transport: sseTransport } });
halo.graphql.subscribe('subscription { newMessage(chatId: "1") { id } }', {}, { next: console.log, error: console.error });`;

/** The minified browser bundle of `page`: its size and the packages it holds. */
async function bundle(page: string): Promise<{ bytes: number; packages: string[] }> {
  const result = await build({
    stdin: { contents: page, resolveDir: PACKAGE_DIR, loader: 'ts' },
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  const output = Object.values(result.metafile.outputs)[0]!;
  const packages = new Set(
    Object.keys(output.inputs).map((input) => /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input)?.[1] ?? '@halo/client'),
  );
  return { bytes: output.bytes, packages: [...packages].sort() };
}

beforeAll(async () => {
  await run('npm', ['run', 'build'], { cwd: PACKAGE_DIR }); // tsc -b: does nothing when up to date
}, 120_000);

it('a WebSocket-only page bundles graphql-ws and no graphql-sse nor graphql', async () => {
  const { packages } = await bundle(WEBSOCKET_PAGE);
  expect(packages).toEqual(['@halo/client', 'graphql-ws']);
});

it('@halo/client/sse brings graphql-sse (and graphql) with it', async () => {
  const ws = await bundle(WEBSOCKET_PAGE);
  const sse = await bundle(SSE_PAGE);
  expect(sse.packages).toEqual(expect.arrayContaining(['graphql-sse', 'graphql']));
  expect(sse.bytes).toBeGreaterThan(ws.bytes);
});
