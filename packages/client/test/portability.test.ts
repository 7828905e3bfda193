import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHaloClient } from '../src';
import { json, startServer } from './servers';

/**
 * The SDK runs in browsers: its sources import only each other and graphql-ws's browser-safe
 * client (the build also compiles them without Node's types: tsconfig.json). graphql-sse (whose
 * entry point also holds its server, which needs `graphql`) is imported for its types only and
 * loaded with `import()` when an SSE subscription starts, from the `@halo/client/sse` entry alone
 * (src/sse.ts): the main entry never reaches it (test/bundle.test.ts).
 */
it('src/ imports nothing but its own modules and graphql-ws/client', () => {
  const dir = join(__dirname, '../src');
  const imports = readdirSync(dir)
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
    .flatMap((f) =>
      [
        ...readFileSync(join(dir, f), 'utf8').matchAll(/^\s*(?:import(?!\s+type\b)|export(?!\s+type\b))[^'"]*from\s+['"]([^'"]+)['"]/gm),
      ].map((m) => m[1]!),
    );
  expect(imports.filter((m) => !m.startsWith('./')).sort()).toEqual(['graphql-ws/client']);
  expect(readFileSync(join(dir, 'sse-subscriptions.ts'), 'utf8')).toContain("import('graphql-sse')");
});

it('keeps the base URL path prefix and leaves empty query parameters out', async () => {
  const server = await startServer((_req, res) => json(res, 200, { data: [], meta: {} }));
  try {
    const halo = createHaloClient({ baseUrl: `${server.url}/edge/` });
    await halo.products.list({ page: 2, category: 'books' });
    expect(server.seen[0]!.url).toBe('/edge/products?page=2&category=books');
    expect(server.seen[0]!.headers.accept).toBe('application/json');
  } finally {
    await server.close();
  }
});

it("refuses the former transport: 'sse', naming the entry that has it", () => {
  const sse = 'sse' as unknown as 'websocket';
  expect(() => createHaloClient({ subscriptions: { transport: sse } })).toThrow("sseTransport from '@halo/client/sse'");
});
