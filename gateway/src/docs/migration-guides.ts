import { readdirSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { resolve } from 'node:path';
import { sendJson } from '@halo/kit/http';
import { GATEWAY_DIR } from '../paths';

/** Where the repository's migration guides live (served by the gateway so a `Link` always resolves). */
export const DEFAULT_GUIDES_DIR = resolve(GATEWAY_DIR, '../docs/migrations');
export const GUIDES_PATH = '/docs/migrations/';

/**
 * The migration guides a deprecation's `Link` points to, read once at start-up and served as
 * `text/markdown` at `/docs/migrations/<file>.md`. A missing directory serves nothing.
 */
export function migrationGuides(dir: string = DEFAULT_GUIDES_DIR) {
  const guides = new Map<string, Buffer>();
  let files: string[] = [];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.md'));
  } catch {
    // No guides shipped with this build.
  }
  for (const f of files) guides.set(`${GUIDES_PATH}${f}`, readFileSync(resolve(dir, f)));
  return {
    /** Answers the request when `path` is a guide; false otherwise. */
    serve(req: IncomingMessage, res: ServerResponse, path: string): boolean {
      const body = guides.get(path);
      if (!body) return false;
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        sendJson(res, 405, { error: 'Method not allowed' }, { allow: 'GET, HEAD' });
        return true;
      }
      res.writeHead(200, {
        'content-type': 'text/markdown; charset=utf-8',
        'content-length': body.length,
        'cache-control': 'public, max-age=3600',
      });
      res.end(req.method === 'HEAD' ? undefined : body);
      return true;
    },
  };
}

export type MigrationGuides = ReturnType<typeof migrationGuides>;
