import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { GraphQLBoolean, GraphQLObjectType, GraphQLSchema, GraphQLString } from 'graphql';
import { createHandler } from 'graphql-sse/lib/use/http';
import { useServer } from 'graphql-ws/use/ws';
import WebSocket, { WebSocketServer } from 'ws';
import { createHaloClient, type HaloClient, type HaloClientOptions } from '../src';
import { SDK_NAME, SDK_VERSION } from '../src/version';
import { sseTransport } from '../src/sse';
import { json, startServer, type TestServer } from './servers';

/**
 * The SDK names itself on every GraphQL request and subscription, so the gateway records usage
 * per client name and version (docs/registry.md): `apollographql-client-name` and
 * `apollographql-client-version`, `@halo/client` and this package's version unless the app gives
 * its own (`clientName`, `clientVersion`). Over HTTP and SSE as headers, over WebSocket in
 * `connection_init` (a browser cannot set headers on an upgrade). Against real local servers:
 * plain HTTP, graphql-ws and graphql-sse's own handlers. gateway/test/usage-clients.test.ts
 * sends them through the real gateway to the real registry.
 */
const NAME = 'apollographql-client-name';
const VERSION = 'apollographql-client-version';
const PACKAGE = JSON.parse(readFileSync(join(__dirname, '../package.json'), 'utf8')) as { name: string; version: string };

const schema = new GraphQLSchema({
  query: new GraphQLObjectType({ name: 'Query', fields: { ok: { type: GraphQLBoolean, resolve: () => true } } }),
  mutation: new GraphQLObjectType({ name: 'Mutation', fields: { touch: { type: GraphQLBoolean, resolve: () => true } } }),
  subscription: new GraphQLObjectType({
    name: 'Subscription',
    fields: {
      ping: {
        type: GraphQLString,
        subscribe: async function* () {
          yield { ping: 'pong' };
        },
      },
    },
  }),
});

/** The name and version headers of a request, as a server saw them. */
const infoOf = (headers: IncomingHttpHeaders) => ({ name: headers[NAME], version: headers[VERSION] });

let http: TestServer;
const clients: HaloClient[] = [];
const client = (opts: HaloClientOptions = {}) => {
  const c = createHaloClient({ baseUrl: http.url, graphql: { persistedQueries: false }, ...opts });
  clients.push(c);
  return c;
};

beforeAll(async () => {
  http = await startServer((req, res, body) => {
    if (req.url?.startsWith('/graphql')) {
      const parsed = body ? (JSON.parse(body) as unknown) : null;
      return json(res, 200, Array.isArray(parsed) ? parsed.map(() => ({ data: { ok: true } })) : { data: { ok: true } });
    }
    json(res, 200, { data: [], meta: {} });
  });
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  http.seen.length = 0;
});
afterAll(() => http?.close());

it('src/version.ts is package.json’s name and version (npm run build --workspace @halo/client writes it)', () => {
  expect({ name: SDK_NAME, version: SDK_VERSION }).toEqual({ name: PACKAGE.name, version: PACKAGE.version });
});

describe('GraphQL over HTTP', () => {
  it('by default every GraphQL request names @halo/client and its version: POST, GET, mutations, batches', async () => {
    const halo = client();
    await halo.graphql.query('{ ok }');
    await halo.graphql.query('{ ok }', undefined, { get: true });
    await halo.graphql.mutate('mutation { touch }');
    await halo.graphql.batch([{ query: '{ ok }' }, { query: '{ ok }' }]);
    expect(http.seen.map((s) => [s.method, infoOf(s.headers)])).toEqual([
      ['POST', { name: '@halo/client', version: SDK_VERSION }],
      ['GET', { name: '@halo/client', version: SDK_VERSION }],
      ['POST', { name: '@halo/client', version: SDK_VERSION }],
      ['POST', { name: '@halo/client', version: SDK_VERSION }],
    ]);
  });

  it('REST calls do not carry them (usage is GraphQL usage)', async () => {
    await client().products.list();
    expect(infoOf(http.seen[0]!.headers)).toEqual({ name: undefined, version: undefined });
  });

  it('clientName and clientVersion replace them; a clientName alone sends no version; an empty one sends neither', async () => {
    await client({ clientName: 'ios-app', clientVersion: '2.3.1' }).graphql.query('{ ok }');
    await client({ clientName: 'ios-app' }).graphql.query('{ ok }');
    await client({ clientVersion: '9.9.9' }).graphql.query('{ ok }');
    await client({ clientName: '' }).graphql.query('{ ok }');
    expect(http.seen.map((s) => infoOf(s.headers))).toEqual([
      { name: 'ios-app', version: '2.3.1' },
      { name: 'ios-app', version: undefined },
      { name: '@halo/client', version: '9.9.9' },
      { name: undefined, version: undefined },
    ]);
  });

  it('the client’s own headers, then a call’s, win over them, in any case, never sent twice', async () => {
    const halo = client({ clientName: 'ios-app', clientVersion: '2.3.1', headers: { 'Apollographql-Client-Version': '2.3.1-beta' } });
    await halo.graphql.query('{ ok }');
    await halo.graphql.query('{ ok }', undefined, { headers: { 'APOLLOGRAPHQL-CLIENT-NAME': 'widget' } });
    expect(http.seen.map((s) => infoOf(s.headers))).toEqual([
      { name: 'ios-app', version: '2.3.1-beta' },
      { name: 'widget', version: '2.3.1-beta' },
    ]);
  });
});

describe('subscriptions', () => {
  let server: Server;
  let url: string;
  const initPayloads: unknown[] = [];
  const streamHeaders: IncomingHttpHeaders[] = [];

  beforeAll(async () => {
    const sse = createHandler({ schema });
    server = createServer((req, res) => {
      if (req.url === '/graphql/stream') {
        streamHeaders.push(req.headers);
        return void sse(req, res);
      }
      res.writeHead(404).end();
    });
    useServer(
      { schema, onConnect: (ctx) => void initPayloads.push(ctx.connectionParams) },
      new WebSocketServer({ server, path: '/graphql' }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const firstEvent = async (halo: HaloClient) => {
    for await (const event of halo.graphql.iterate<{ ping: string }>('subscription { ping }')) return event.data;
    return null;
  };

  it('over WebSocket: in connection_init, with the token', async () => {
    initPayloads.length = 0;
    const sdk = createHaloClient({ baseUrl: url, accessToken: 'tok', subscriptions: { webSocketImpl: WebSocket } });
    const app = createHaloClient({
      baseUrl: url,
      clientName: 'ios-app',
      clientVersion: '2.3.1',
      subscriptions: { webSocketImpl: WebSocket },
    });
    clients.push(sdk, app);
    expect(await firstEvent(sdk)).toEqual({ ping: 'pong' });
    expect(await firstEvent(app)).toEqual({ ping: 'pong' });
    expect(initPayloads).toEqual([
      { [NAME]: '@halo/client', [VERSION]: SDK_VERSION, authorization: 'Bearer tok' },
      { [NAME]: 'ios-app', [VERSION]: '2.3.1' },
    ]);
  });

  it('over SSE: as headers of each stream request, the client’s own headers winning', async () => {
    streamHeaders.length = 0;
    const sse = { transport: sseTransport };
    const sdk = createHaloClient({ baseUrl: url, subscriptions: sse });
    const app = createHaloClient({ baseUrl: url, clientName: 'web', clientVersion: '2.4.0', subscriptions: sse });
    const own = createHaloClient({ baseUrl: url, headers: { 'Apollographql-Client-Name': 'kiosk' }, subscriptions: sse });
    clients.push(sdk, app, own);
    for (const halo of [sdk, app, own]) expect(await firstEvent(halo)).toEqual({ ping: 'pong' });
    expect(streamHeaders.map(infoOf)).toEqual([
      { name: '@halo/client', version: SDK_VERSION },
      { name: 'web', version: '2.4.0' },
      { name: 'kiosk', version: SDK_VERSION },
    ]);
  });
});
