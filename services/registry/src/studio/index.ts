import type { IncomingMessage } from 'node:http';
import { badRequest, isHaloError } from '@halo/kit/errors';
import { route } from '@halo/kit/http';
import express, { Router, type Request, type Response } from 'express';
import type { Principal } from '../domain/model';
import type { Registry } from '../domain/registry';
import { html, page, type Html } from './html';
import { clientsPage, clientVersionPage } from './pages-clients';
import { diffPage, historyPage, overviewPage, servicesPage } from './pages-registry';
import { schemaPage, typePage, type UsageTotals } from './pages-schema';
import { checkPage, checksPage, coordinatePage, usagePage } from './pages-usage';
import { clearedSessionCookie, sessionCookie, sessionPrincipal, sessionToken } from './session';

/**
 * Halo Studio (docs/registry.md, "Studio"): the registry as web pages a service team opens, served
 * by the registry itself under `/studio` — overview, schema explorer, history with side-by-side
 * diffs, checks, usage, the operation lists client apps registered. Read-only. Who may look:
 * whoever may read the registry's API (its principal resolver), or a browser signed in with an
 * admin API key that holds `schema:read` or `schema:write` (./session.ts).
 */
export interface StudioOptions {
  registry: Registry;
  principalOf: (req: IncomingMessage) => Promise<Principal>;
  /** May this principal read the registry? Throws 401/403 otherwise. */
  authorizeReader: (principal: Principal) => void;
  exchangeApiKey: (apiKey: string) => Promise<string>;
  jwtSecret: string | undefined;
  /** The usage window the pages show (the registry's check window). */
  windowDays: number;
}

const SERVICE = /^[a-z][a-z0-9-]{0,62}$/;
const TYPE_NAME = /^[_A-Za-z][_0-9A-Za-z]{0,127}$/;

interface PageSpec {
  path: string;
  title: (req: Request) => string;
  /** The navigation entry it belongs to. */
  section: string;
  body: (req: Request) => Promise<Html>;
}

/** Every page: its path, title, section and body. */
function pagesOf({ registry, windowDays }: StudioOptions): PageSpec[] {
  const usageTotals = async (): Promise<UsageTotals> =>
    new Map((await registry.usageByCoordinate(windowDays)).coordinates.map((c) => [c.coordinate, { count: c.count, clients: c.clients }]));
  const service = (req: Request) => checked(req.params.service, SERVICE, 'service');
  return [
    { path: '/studio', title: () => 'Overview', section: '/studio', body: () => overviewPage(registry) },
    {
      path: '/studio/schema',
      title: () => 'Schema',
      section: '/studio/schema',
      body: async () => schemaPage(registry, await usageTotals(), windowDays),
    },
    {
      path: '/studio/schema/:type',
      title: (req) => String(req.params.type),
      section: '/studio/schema',
      body: async (req) => typePage(registry, checked(req.params.type, TYPE_NAME, 'type'), await usageTotals(), windowDays),
    },
    { path: '/studio/services', title: () => 'History', section: '/studio/services', body: () => servicesPage(registry) },
    {
      path: '/studio/services/:service',
      title: (req) => `History of ${String(req.params.service)}`,
      section: '/studio/services',
      body: (req) => historyPage(registry, service(req)),
    },
    {
      path: '/studio/services/:service/versions/:range',
      title: (req) => `${String(req.params.service)} ${String(req.params.range)}`,
      section: '/studio/services',
      body: (req) => {
        const m = /^([1-9]\d{0,8})\.\.\.([1-9]\d{0,8})$/.exec(String(req.params.range));
        if (!m) throw notPossible('compare two versions as /versions/14...17');
        return diffPage(registry, service(req), Number(m[1]), Number(m[2]));
      },
    },
    {
      path: '/studio/checks',
      title: () => 'Checks',
      section: '/studio/checks',
      body: (req) =>
        checksPage(registry, typeof req.query.service === 'string' && SERVICE.test(req.query.service) ? req.query.service : undefined),
    },
    {
      path: '/studio/checks/:id',
      title: (req) => `Check ${String(req.params.id)}`,
      section: '/studio/checks',
      body: (req) => checkPage(registry, Number(checked(req.params.id, /^[1-9]\d{0,15}$/, 'check'))),
    },
    { path: '/studio/usage', title: () => 'Usage', section: '/studio/usage', body: () => usagePage(registry, windowDays) },
    {
      path: '/studio/usage/:coordinate',
      title: (req) => `Usage of ${String(req.params.coordinate)}`,
      section: '/studio/usage',
      body: (req) => coordinatePage(registry, String(req.params.coordinate), windowDays),
    },
    { path: '/studio/clients', title: () => 'Clients', section: '/studio/clients', body: () => clientsPage(registry) },
    {
      // Each part percent-encoded in links (clientVersionPath): a client's name may hold `/`.
      path: '/studio/clients/:client/:version',
      title: (req) => `${String(req.params.client)} ${String(req.params.version)}`,
      section: '/studio/clients',
      body: (req) => clientVersionPage(registry, String(req.params.client), String(req.params.version)),
    },
  ];
}

export function studioRoutes(opts: StudioOptions): Router {
  const router = Router();

  /** Who is looking: the session cookie first, then what the API accepts (headers, development loopback). */
  const viewer = async (req: Request): Promise<string | undefined> => {
    const token = sessionToken(req);
    if (token !== undefined) {
      const session = sessionPrincipal(token, opts.jwtSecret);
      if (session) return `signed in as ${session.kind === 'admin' ? session.name : ''}`;
    }
    const principal = await opts.principalOf(req);
    opts.authorizeReader(principal);
    return principal.kind === 'anonymous' ? 'development: open on loopback' : undefined;
  };

  // The two forms (GET, they work without script) go to the shareable URLs; registered before
  // the pages, so that `/studio/usage/go` is not read as a coordinate.
  route(router, '/studio/services/:service/compare', {
    get: (req, res) => {
      const service = checked(req.params.service, SERVICE, 'service');
      const [from, to] = [req.query.from, req.query.to].map((v) => (typeof v === 'string' && /^[1-9]\d{0,8}$/.test(v) ? v : '1'));
      res.redirect(303, `/studio/services/${service}/versions/${from}...${to}`);
    },
  });
  route(router, '/studio/usage/go', {
    get: (req, res) => {
      const c = typeof req.query.coordinate === 'string' ? req.query.coordinate.trim() : '';
      res.redirect(303, `/studio/usage/${encodeURIComponent(c)}`);
    },
  });
  for (const spec of pagesOf(opts)) {
    route(router, spec.path, {
      get: async (req, res) => {
        let who: string | undefined;
        try {
          who = await viewer(req);
        } catch (err) {
          return refuse(req, res, err);
        }
        try {
          sendPage(res, 200, page({ title: spec.title(req), section: spec.section, body: await spec.body(req), who }));
        } catch (err) {
          if (!isHaloError(err) || err.httpStatus >= 500) throw err;
          const title = err.httpStatus === 404 ? 'Not found' : 'Not possible';
          sendPage(res, err.httpStatus, page({ title, section: spec.section, body: html`<p>${err.message}</p>`, who }));
        }
      },
    });
  }
  signInRoutes(router, opts);
  return router;
}

/** The sign-in form (an admin's API key exchanged through auth for a session cookie) and sign-out. */
function signInRoutes(router: Router, opts: StudioOptions): void {
  const signIn = async (req: Request, res: Response): Promise<void> => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const key = typeof body.apiKey === 'string' ? body.apiKey.trim() : '';
    const next = safeNext(body.next);
    if (!key) return sendPage(res, 400, signInPage(next, 'Enter an API key.'));
    let token: string;
    try {
      token = await opts.exchangeApiKey(key);
    } catch (err) {
      if (isHaloError(err) && err.kind === 'UNAUTHENTICATED') return sendPage(res, 401, signInPage(next, 'That API key is not valid.'));
      throw err;
    }
    const session = sessionPrincipal(token, opts.jwtSecret);
    if (!session) {
      return sendPage(
        res,
        403,
        signInPage(next, "That key may not read the registry: it needs an admin's schema:read or schema:write scope."),
      );
    }
    res.setHeader('set-cookie', sessionCookie(token, req, (session.expiresAt - Date.now()) / 1000));
    res.redirect(303, next);
  };
  route(router, '/studio/sign-in', {
    get: (req, res) => sendPage(res, 200, signInPage(typeof req.query.next === 'string' ? req.query.next : '/studio')),
    post: (req, res, next) =>
      formBody(req, res, (err?: unknown) => {
        if (err) return next(err);
        void signIn(req, res).catch(next);
      }),
  });
  route(router, '/studio/sign-out', {
    post: (_req, res) => {
      res.setHeader('set-cookie', clearedSessionCookie);
      res.redirect(303, '/studio/sign-in');
    },
  });
}

const notPossible = (message: string) => badRequest(message);

/** The sign-in form's body (a few hundred bytes at most). */
const formBody = express.urlencoded({ extended: false, limit: '4kb' });

function checked(value: unknown, shape: RegExp, what: string): string {
  const v = String(value);
  if (!shape.test(v)) throw notPossible(`not a ${what}: ${v}`);
  return v;
}

/** Only a Studio path: the sign-in page never redirects elsewhere (no open redirect). */
function safeNext(next: unknown): string {
  const ok =
    typeof next === 'string' &&
    /^\/studio(\/[A-Za-z0-9_.\-/]*)?(\?[A-Za-z0-9_.=&%-]*)?$/.test(next) &&
    !next.includes('//') &&
    !/\/\.\.?(\/|\?|$)/.test(next);
  return ok ? next : '/studio';
}

function sendPage(res: Response, status: number, body: string): void {
  res
    .status(status)
    .set({
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      // Nothing but this page's own inline style: no script, no frame, no other origin.
      'content-security-policy':
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
    })
    .send(body);
}

/** No credentials (or expired ones): the sign-in page, 401. Credentials that may not read: 403, said on the page. */
function refuse(req: Request, res: Response, err: unknown): void {
  if (!isHaloError(err)) throw err;
  if (err.kind === 'UNAUTHENTICATED') {
    res.setHeader('set-cookie', clearedSessionCookie);
    return sendPage(res, 401, signInPage(safeNext(req.originalUrl)));
  }
  if (err.kind === 'FORBIDDEN' || err.kind === 'UNAVAILABLE') {
    return sendPage(
      res,
      err.httpStatus,
      page({
        title: 'Not allowed',
        section: '',
        body: html`<p>${err.message}. The Studio needs an admin API key with <code>schema:read</code> or <code>schema:write</code>.</p>`,
      }),
    );
  }
  throw err;
}

function signInPage(next: string, problem?: string): string {
  return page({
    title: 'Sign in',
    section: '',
    body: html`<p>
        The Studio shows the schema registry: every service's contract, its history, checks and usage. Sign in with an admin's API key that
        holds <code>schema:read</code> (or <code>schema:write</code>); the key is exchanged once and not kept.
      </p>
      ${problem ? html`<p class="bad" role="alert">${problem}</p>` : ''}
      <form method="post" action="/studio/sign-in">
        <input type="hidden" name="next" value="${safeNext(next)}" />
        <p><label for="apiKey">API key</label><input id="apiKey" name="apiKey" type="password" autocomplete="off" required size="50" /></p>
        <p><button type="submit">Sign in</button></p>
      </form>`,
  });
}
