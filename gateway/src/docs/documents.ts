import { createHash } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, resolve } from 'node:path';
import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';
import { sendJson } from '@halo/kit/http';
import {
  DOCS_ASSETS,
  DOCS_PATH,
  GRAPHIQL_ASSETS,
  graphiqlEnvironment,
  graphiqlInit,
  graphiqlPage,
  indexPage,
  OPENAPI_PATH,
  PAGE_POLICY,
  swaggerInit,
  swaggerPage,
} from './pages';

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

export { DOCS_PATH, OPENAPI_PATH };

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
  const assets = assetsFor(graphiql);
  const index = indexFor(graphiql);
  const docsPage = text(swaggerPage, HTML);
  const idePage = text(graphiqlPage, HTML);
  /** Compressed assets, made once on first use (a bundle is megabytes; gzip takes it to a quarter). */
  const compressed = new Map<string, Promise<Buffer>>();

  return {
    /** Answers the request when `path` is one of these pages; false otherwise. */
    serve(req: IncomingMessage, res: ServerResponse, path: string): boolean {
      if (path === OPENAPI_PATH) {
        if (onlyRead(req, res)) sendOpenApi(req, res, openapi());
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
      if (onlyRead(req, res)) sendAsset(req, res, path, asset, compressed);
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

/** The files and generated scripts the pages load, by path; GraphiQL's only when it is on. */
function assetsFor(graphiql: boolean): Map<string, Asset | Text> {
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
  return assets;
}

/** `GET /`: where each document is, as a page for a browser or as JSON. */
function indexFor(graphiql: boolean): { html: Text; json: Text } {
  const links: [string, string, string][] = [
    [DOCS_PATH, 'REST reference', 'every route, rendered from the OpenAPI document'],
    [OPENAPI_PATH, 'OpenAPI 3.1 document', 'the same, for tools'],
    ['/graphql', 'GraphQL', graphiql ? 'POST queries here; open it in a browser for GraphiQL' : 'POST queries here'],
  ];
  return {
    html: text(indexPage(links), HTML),
    json: text(
      `${JSON.stringify({
        name: 'Halo API',
        links: { docs: DOCS_PATH, openapi: OPENAPI_PATH, graphql: '/graphql', ...(graphiql ? { graphiql: '/graphql' } : {}) },
      })}\n`,
      'application/json; charset=utf-8',
    ),
  };
}

function onlyRead(req: IncomingMessage, res: ServerResponse): boolean {
  if (req.method === 'GET' || req.method === 'HEAD') return true;
  sendJson(res, 405, { error: 'Method not allowed' }, { allow: 'GET, HEAD' });
  return false;
}

/** The OpenAPI document: reloadable, so clients revalidate (a 304 costs nothing) instead of caching it for a while. */
function sendOpenApi(req: IncomingMessage, res: ServerResponse, { body, etag }: OpenApiBody): void {
  const headers = { etag, 'cache-control': 'no-cache', 'access-control-allow-origin': '*' };
  if (req.headers['if-none-match'] === etag) {
    res.writeHead(304, headers);
    res.end();
    return;
  }
  sendText(req, res, { body, type: 'application/json; charset=utf-8' }, headers);
}

function sendText(req: IncomingMessage, res: ServerResponse, t: Text, headers: Record<string, string>): void {
  res.writeHead(200, { 'content-type': t.type, 'content-length': t.body.length, 'x-content-type-options': 'nosniff', ...headers });
  res.end(req.method === 'HEAD' ? undefined : t.body);
}

function sendAsset(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  asset: Asset | Text,
  compressed: Map<string, Promise<Buffer>>,
): void {
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

export type Docs = ReturnType<typeof createDocs>;
