import { createHash } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, resolve } from 'node:path';
import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';
import { sendJson } from '@halo/kit';

/**
 * What the gateway shows people and tools about its API, all served from this process and its
 * npm packages (no CDN, so it works offline and behind a strict firewall):
 *
 * - `GET /openapi.json`: the composed OpenAPI 3.1 document (gateway/openapi.json, hot-reloaded);
 * - `GET /docs`: that document rendered by Swagger UI (`swagger-ui-dist`);
 * - `GET /graphql` from a browser (`Accept: text/html`), in the embedded development mode only:
 *   GraphiQL (the prebuilt bundle of `@graphql-yoga/graphiql`);
 * - `GET /`: where each of them is, as JSON, or as a page for a browser.
 */

const gzip = promisify(gzipCallback);

/** The composed OpenAPI document as served: its bytes and their ETag. */
export interface OpenApiBody {
  body: Buffer;
  etag: string;
}

/** Checks a composed OpenAPI document (JSON, OpenAPI 3.1) before it is served. */
export function acceptOpenApi(text: string): OpenApiBody {
  const doc = JSON.parse(text) as { openapi?: unknown };
  if (typeof doc.openapi !== 'string' || !doc.openapi.startsWith('3.1.')) throw new Error('not an OpenAPI 3.1 document');
  const body = Buffer.from(text);
  return { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
}

export const DOCS_PATH = '/docs';
export const OPENAPI_PATH = '/openapi.json';
const DOCS_ASSETS = '/docs/assets/';
const GRAPHIQL_ASSETS = '/graphiql/assets/';

/**
 * Pages: the HTML is ours, every script and style comes from the gateway itself. The policy
 * says so to the browser too; inline styles are what both UIs set at run time, and GraphiQL's
 * editor runs its language services in workers from the same origin.
 */
const PAGE_POLICY =
  "default-src 'self'; img-src 'self' data:; font-src 'self' data:; style-src 'self' 'unsafe-inline'; worker-src 'self' blob:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

const swaggerPage = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Halo API reference</title>
    <link rel="stylesheet" href="${DOCS_ASSETS}swagger-ui.css" />
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="${DOCS_ASSETS}swagger-ui-bundle.js"></script>
    <script src="${DOCS_ASSETS}docs.js"></script>
  </body>
</html>
`;

// validatorUrl: null keeps Swagger UI from sending the document to its public validator.
const swaggerInit = `window.ui = SwaggerUIBundle({
  url: ${JSON.stringify(OPENAPI_PATH)},
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  displayOperationId: true,
});
`;

const graphiqlPage = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Halo GraphiQL</title>
    <link rel="stylesheet" href="${GRAPHIQL_ASSETS}graphiql.css" />
    <style>html, body, #graphiql { height: 100%; margin: 0; }</style>
  </head>
  <body>
    <div id="graphiql"></div>
    <script src="${GRAPHIQL_ASSETS}environment.js"></script>
    <script src="${GRAPHIQL_ASSETS}yoga-graphiql.umd.js"></script>
    <script src="${GRAPHIQL_ASSETS}graphiql.js"></script>
  </body>
</html>
`;

/** The editor's language services run in workers, loaded from here rather than from blobs of inlined code. */
const graphiqlEnvironment = `self.MonacoEnvironment = {
  globalAPI: false,
  getWorkerUrl: function (_moduleId, label) {
    var workers = {
      editorWorkerService: 'editor.worker.bundle.js',
      json: 'json.worker.bundle.js',
      graphql: 'graphql.worker..bundle.js',
    };
    return ${JSON.stringify(`${GRAPHIQL_ASSETS}monacoeditorwork/`)} + (workers[label] || workers.editorWorkerService);
  },
};
`;

// Subscriptions over graphql-ws (graphql-transport-ws), as the gateway speaks them.
const graphiqlInit = `YogaGraphiQL.renderYogaGraphiQL(document.getElementById('graphiql'), {
  endpoint: '/graphql',
  title: 'Halo GraphiQL',
  subscriptionsProtocol: 'WS',
});
`;

const indexPage = (links: [string, string, string][]) => `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>Halo API</title>
    <style>body { font: 16px/1.5 system-ui, sans-serif; margin: 3rem auto; max-width: 40rem; padding: 0 1rem; }</style>
  </head>
  <body>
    <h1>Halo API</h1>
    <ul>
${links.map(([href, name, what]) => `      <li><a href="${href}">${name}</a>: ${what}</li>`).join('\n')}
    </ul>
  </body>
</html>
`;

interface Asset {
  file: string;
  type: string;
}

/** A generated text (a page or a small script). */
interface Text {
  body: Buffer;
  type: string;
}

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';
const HTML = 'text/html; charset=utf-8';

const text = (body: string, type: string): Text => ({ body: Buffer.from(body), type });

/** A browser navigating: it asks for HTML (API clients ask for JSON or anything). */
export const wantsHtml = (req: IncomingMessage) => req.headers.accept?.includes('text/html') === true;

export interface DocsOptions {
  /** The OpenAPI document in service (it is reloaded when the file changes). */
  openapi: () => OpenApiBody;
  /** GraphiQL at `/graphql` for browsers: the embedded development mode only. */
  graphiql: boolean;
}

export function createDocs({ openapi, graphiql }: DocsOptions) {
  const swaggerDir = dirname(require.resolve('swagger-ui-dist/package.json'));
  const assets = new Map<string, Asset | Text>([
    [`${DOCS_ASSETS}swagger-ui.css`, { file: resolve(swaggerDir, 'swagger-ui.css'), type: CSS }],
    [`${DOCS_ASSETS}swagger-ui-bundle.js`, { file: resolve(swaggerDir, 'swagger-ui-bundle.js'), type: JS }],
    [`${DOCS_ASSETS}docs.js`, text(swaggerInit, JS)],
  ]);
  if (graphiql) {
    // Resolved only when GraphiQL is on: production never touches the package.
    const dir = resolve(dirname(require.resolve('@graphql-yoga/graphiql/package.json')), 'dist');
    assets.set(`${GRAPHIQL_ASSETS}graphiql.css`, { file: resolve(dir, 'graphiql.css'), type: CSS });
    assets.set(`${GRAPHIQL_ASSETS}yoga-graphiql.umd.js`, { file: resolve(dir, 'yoga-graphiql.umd.js'), type: JS });
    for (const worker of ['editor.worker.bundle.js', 'json.worker.bundle.js', 'graphql.worker..bundle.js']) {
      assets.set(`${GRAPHIQL_ASSETS}monacoeditorwork/${worker}`, { file: resolve(dir, 'monacoeditorwork', worker), type: JS });
    }
    assets.set(`${GRAPHIQL_ASSETS}environment.js`, text(graphiqlEnvironment, JS));
    assets.set(`${GRAPHIQL_ASSETS}graphiql.js`, text(graphiqlInit, JS));
  }
  // A missing file is a broken install: say so at start-up, not on the first visit.
  for (const asset of assets.values()) if ('file' in asset) statSync(asset.file);

  const links: [string, string, string][] = [
    [DOCS_PATH, 'REST reference', 'every route, rendered from the OpenAPI document'],
    [OPENAPI_PATH, 'OpenAPI 3.1 document', 'the same, for tools'],
    ['/graphql', 'GraphQL', graphiql ? 'POST queries here; open it in a browser for GraphiQL' : 'POST queries here'],
  ];
  const index = {
    html: text(indexPage(links), HTML),
    json: text(
      `${JSON.stringify({
        name: 'Halo API',
        links: { docs: DOCS_PATH, openapi: OPENAPI_PATH, graphql: '/graphql', ...(graphiql ? { graphiql: '/graphql' } : {}) },
      })}\n`,
      'application/json; charset=utf-8',
    ),
  };
  const docsPage = text(swaggerPage, HTML);
  const idePage = text(graphiqlPage, HTML);
  /** Compressed assets, made once on first use (a bundle is megabytes; gzip takes it to a quarter). */
  const compressed = new Map<string, Promise<Buffer>>();

  const onlyRead = (req: IncomingMessage, res: ServerResponse): boolean => {
    if (req.method === 'GET' || req.method === 'HEAD') return true;
    sendJson(res, 405, { error: 'Method not allowed' }, { allow: 'GET, HEAD' });
    return false;
  };

  function sendText(req: IncomingMessage, res: ServerResponse, t: Text, headers: Record<string, string>): void {
    res.writeHead(200, { 'content-type': t.type, 'content-length': t.body.length, 'x-content-type-options': 'nosniff', ...headers });
    res.end(req.method === 'HEAD' ? undefined : t.body);
  }

  function sendAsset(req: IncomingMessage, res: ServerResponse, path: string, asset: Asset | Text): void {
    // The packages' files change only with an upgrade, which restarts the gateway.
    const headers = { 'cache-control': 'public, max-age=3600', 'x-content-type-options': 'nosniff', vary: 'Accept-Encoding' };
    if ('body' in asset) return sendText(req, res, asset, headers);
    if (!/\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''))) {
      const size = statSync(asset.file).size;
      res.writeHead(200, { 'content-type': asset.type, 'content-length': size, ...headers });
      if (req.method === 'HEAD') return void res.end();
      createReadStream(asset.file)
        .on('error', () => res.destroy())
        .pipe(res);
      return;
    }
    let zipped = compressed.get(path);
    if (!zipped) {
      zipped = readFile(asset.file).then((raw) => gzip(raw));
      compressed.set(path, zipped);
    }
    zipped.then(
      (body) => {
        res.writeHead(200, { 'content-type': asset.type, 'content-length': body.length, 'content-encoding': 'gzip', ...headers });
        res.end(req.method === 'HEAD' ? undefined : body);
      },
      () => {
        compressed.delete(path);
        if (!res.headersSent) sendJson(res, 500, { error: 'Internal server error' });
      },
    );
  }

  return {
    /** Answers the request when `path` is one of these pages; false otherwise. */
    serve(req: IncomingMessage, res: ServerResponse, path: string): boolean {
      if (path === OPENAPI_PATH) {
        if (!onlyRead(req, res)) return true;
        const { body, etag } = openapi();
        // Reloadable: clients revalidate (a 304 costs nothing) instead of caching it for a while.
        const headers = { etag, 'cache-control': 'no-cache', 'access-control-allow-origin': '*' };
        if (req.headers['if-none-match'] === etag) {
          res.writeHead(304, headers);
          res.end();
          return true;
        }
        sendText(req, res, { body, type: 'application/json; charset=utf-8' }, headers);
        return true;
      }
      if (path === DOCS_PATH) {
        if (onlyRead(req, res)) sendText(req, res, docsPage, { 'cache-control': 'no-cache', 'content-security-policy': PAGE_POLICY });
        return true;
      }
      if (path === '/') {
        if (!onlyRead(req, res)) return true;
        const page = wantsHtml(req) ? index.html : index.json;
        sendText(req, res, page, { 'cache-control': 'no-cache', vary: 'Accept' });
        return true;
      }
      const asset = assets.get(path);
      if (!asset) return false;
      if (onlyRead(req, res)) sendAsset(req, res, path, asset);
      return true;
    },
    /**
     * GraphiQL for a browser opening `/graphql` (development only). Queries keep going to
     * Apollo: they are POSTs, or GETs that ask for JSON.
     */
    graphiql(req: IncomingMessage, res: ServerResponse): boolean {
      if (!graphiql || req.method !== 'GET' || !wantsHtml(req)) return false;
      sendText(req, res, idePage, { 'cache-control': 'no-cache', vary: 'Accept', 'content-security-policy': PAGE_POLICY });
      return true;
    },
  };
}

export type Docs = ReturnType<typeof createDocs>;
