import {
  closedPort,
  composeSupergraph,
  startGateway,
  startSubgraph,
  tempSupergraph,
  until,
  type RunningGateway,
  type TestSubgraph,
} from './helpers';

/**
 * Where the gateway takes its supergraph from (src/supergraph): the committed files at boot,
 * and what it says about it (/readyz, metrics). The registry itself is a real process in
 * e2e/registry-gateway.test.ts; here it is away (a closed port), which must change nothing served.
 */

const SDL = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key"])
  type Query { ping: String version: String }
`;

let subgraph: TestSubgraph;
const gateways: RunningGateway[] = [];
const files: ReturnType<typeof tempSupergraph>[] = [];

beforeAll(async () => {
  subgraph = await startSubgraph(SDL, { Query: { ping: () => 'pong', version: () => 'v2' } });
});
afterAll(async () => {
  for (const gw of gateways) await gw.stop();
  for (const f of files) f.remove();
  await subgraph.stop();
});

const v1 = () => composeSupergraph([{ name: 'content', sdl: SDL.replace(' version: String', ''), url: `${subgraph.url}/graphql` }]);
const v2 = () => composeSupergraph([{ name: 'content', sdl: SDL, url: `${subgraph.url}/graphql` }]);

async function start(env: Record<string, string>) {
  const file = tempSupergraph(v1());
  files.push(file);
  const gw = await startGateway({ SUPERGRAPH_PATH: file.path, ...env });
  gateways.push(gw);
  return { gw, file };
}

const post = (gw: RunningGateway, query: string) =>
  fetch(`${gw.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) }).then(
    async (r) => ({
      status: r.status,
      body: (await r.json()) as { data?: Record<string, unknown>; errors?: { extensions?: { code?: string } }[] },
    }),
  );
const readyz = async (gw: RunningGateway) => {
  const r = await fetch(`${gw.url}/readyz`);
  return { status: r.status, body: (await r.json()) as Record<string, string> };
};
const metrics = async (gw: RunningGateway) => (await fetch(`${gw.metricsUrl}/metrics`)).text();

it('uses the URL the supergraph composes for a subgraph unless <SERVICE>_URL is set', async () => {
  const { gw } = await start({});
  expect((await post(gw, '{ ping }')).body).toEqual({ data: { ping: 'pong' } });
  const overridden = await start({ CONTENT_URL: `http://127.0.0.1:${await closedPort()}` });
  const answer = await post(overridden.gw, '{ ping }');
  expect(answer.body.errors?.[0]?.extensions?.code).toBe('SERVICE_UNAVAILABLE');
});

it('reports the file composition it serves and follows the file without a registry', async () => {
  const { gw, file } = await start({});
  const before = await readyz(gw);
  expect(before).toEqual({ status: 200, body: expect.objectContaining({ status: 'ready', source: 'file', registry: 'off' }) });
  expect(before.body.composition).toMatch(/^file:[0-9a-f]{12}$/);
  expect(await metrics(gw)).toContain(
    `halo_gateway_composition_info{composition="${before.body.composition}",source="file",service="gateway"} 1`,
  );
  expect(await metrics(gw)).not.toMatch(/^halo_gateway_registry_up/m);
  file.write(v2());
  await until(async () => (await readyz(gw)).body.composition !== before.body.composition);
  expect((await post(gw, '{ version }')).body).toEqual({ data: { version: 'v2' } });
});

it('started while the registry is away: not ready, saying why, though it answers from the committed files', async () => {
  const { gw } = await start({ REGISTRY_URL: `http://127.0.0.1:${await closedPort()}`, REGISTRY_POLL_MS: '200' });
  expect((await post(gw, '{ ping }')).body).toEqual({ data: { ping: 'pong' } });
  const r = await readyz(gw);
  expect(r.status).toBe(503);
  expect(r.body).toEqual(
    expect.objectContaining({
      status: 'unavailable',
      reason: expect.stringContaining('the registry has not answered since start-up'),
      source: 'file',
      registry: expect.stringMatching(/^unreachable since /),
    }),
  );
  // It stays so: the files may be older than what its peers serve.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  expect((await readyz(gw)).status).toBe(503);
});

it('with REGISTRY_BOOT_FROM_FILES and the registry away: serves the boot files, ready, saying since when the registry is unreachable', async () => {
  const { gw, file } = await start({
    REGISTRY_URL: `http://127.0.0.1:${await closedPort()}`,
    REGISTRY_POLL_MS: '200',
    REGISTRY_BOOT_FROM_FILES: 'true',
  });
  expect((await post(gw, '{ ping }')).body).toEqual({ data: { ping: 'pong' } });
  const ready = await until(async () => {
    const r = await readyz(gw);
    return r.body.registry?.startsWith('unreachable since ') ? r : null;
  });
  expect(ready.status).toBe(200);
  expect(ready.body).toEqual(expect.objectContaining({ status: 'ready', source: 'file', registryError: 'ECONNREFUSED' }));
  expect(Date.parse(ready.body.registry!.slice('unreachable since '.length))).not.toBeNaN();
  expect(await metrics(gw)).toMatch(/^halo_gateway_registry_up\{service="gateway"\} 0$/m);
  // The files are the boot composition only: with a registry, a file change is not followed.
  file.write(v2());
  await new Promise((r) => setTimeout(r, 2_500));
  expect((await post(gw, '{ version }')).status).toBe(400);
});
