import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { build } from 'esbuild';
import type { Browser, Page } from 'puppeteer-core';
import { describeWithChromium, launchChromium } from './browser/chromium';
import type { Failure } from './browser/page';
import { startE2ESystem } from './helpers';

/**
 * Halo from a real browser (headless Chromium): a web app on a listed origin signs in through
 * `@halo/client`, calls REST and GraphQL, resumes its session from the httpOnly refresh cookie and
 * hears chat messages over WebSocket and over SSE; a page on an origin not on `CORS_ORIGINS` is
 * blocked by the browser (CORS) and its WebSocket refused; `/docs` "Try it out" and GraphiQL work.
 *
 * Origins: the gateway is `http://localhost:<gateway port>`, the web app `http://localhost:<app
 * port>` — another origin but the same site, so the `SameSite=Strict` refresh cookie is kept and
 * sent (docs/calling-halo.md "Calling Halo from a web app"). The same app server reached as `http://127.0.0.1:
 * <app port>` is the origin that is not listed.
 */
const describeBrowser = describeWithChromium('e2e/browser.test.ts');

let sys: Awaited<ReturnType<typeof startE2ESystem>> | undefined;
let browser: Browser | undefined;
let app: Server | undefined;
let gateway: string;
let listedOrigin: string;
let otherOrigin: string;

/** The web app: one HTML page that loads the bundled page script (e2e/browser/page.ts). */
async function serveApp(): Promise<Server> {
  const bundle = await build({
    entryPoints: [join(__dirname, 'browser', 'page.ts')],
    bundle: true,
    platform: 'browser',
    format: 'iife',
    target: 'chrome120',
    write: false,
    logLevel: 'silent',
  });
  const script = bundle.outputFiles[0]?.text ?? '';
  const html =
    '<!doctype html><html><head><meta charset="utf-8"><title>web app</title><script src="/page.js"></script></head><body></body></html>';
  const server = createServer((req, res) => {
    if (req.url === '/page.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
    else if (req.url === '/') res.writeHead(200, { 'content-type': 'text/html' }).end(html);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

beforeAll(async () => {
  // First, so that a missing Chromium fails (CI) before anything starts.
  browser = await launchChromium();
  // Listed: the app on localhost. The gateway and auth read the one list (login, refresh, logout).
  app = await serveApp();
  const appPort = (app.address() as AddressInfo).port;
  listedOrigin = `http://localhost:${appPort}`;
  otherOrigin = `http://127.0.0.1:${appPort}`;
  const cors = { CORS_ORIGINS: listedOrigin };
  sys = await startE2ESystem({
    // GraphiQL is served in development only.
    envFor: { gateway: { ...cors, HALO_ENV: 'development' }, auth: cors },
  });
  gateway = `http://localhost:${new URL(sys.url).port}`;
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => (app ? app.close(resolve) : resolve(undefined)));
  await sys?.stop();
}, 60_000);

/** Uncaught errors of the web app's pages: none is expected (checked after all). */
const pageErrors: string[] = [];

async function until(what: string, ok: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The text of the first element matching `selector` (Monaco writes spaces as U+00A0), or '' if none. */
async function textOf(page: Page, selector: string): Promise<string> {
  const el = await page.$(selector);
  if (!el) return '';
  return ((await el.evaluate((e) => e.textContent)) ?? '').replace(/\u00a0/g, ' ');
}

/** Polls `ok` (every 50 ms, at most 15 s). */
async function untilAsync(what: string, ok: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A fresh tab on `origin`'s web app with a client for the gateway; page errors fail the test. */
async function openApp(origin: string): Promise<Page> {
  const page = await browser!.newPage();
  page.on('pageerror', (err) => void pageErrors.push(`${origin}: ${(err as Error).message}`));
  await page.goto(`${origin}/`, { waitUntil: 'load' });
  await page.evaluate((gw) => haloPage.start(gw), gateway);
  return page;
}

/** Waits until the page's listener `i` heard `text` (or failed, which fails the test at once). */
async function heard(page: Page, i: number, text: string): Promise<void> {
  await page.waitForFunction(
    (n: number, t: string) => haloPage.listener(n).texts.includes(t) || haloPage.listener(n).errors.length > 0,
    { timeout: 15_000, polling: 50 },
    i,
    text,
  );
  const listener = await page.evaluate((n) => haloPage.listener(n), i);
  expect(listener.errors).toEqual([]);
  expect(listener.texts).toContain(text);
}

/**
 * A subscription hears only what is sent once it is live upstream: sends probes until every
 * listener heard one (each probe waited for up to 1 s; the whole at most 20 s).
 */
async function live(page: Page, chatId: string, listeners: number[]): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (let n = 0; Date.now() < deadline; n++) {
    const probe = `probe ${n} ${Math.random()}`;
    await page.evaluate((c, t) => haloPage.send(c, t), chatId, probe);
    const all = await page
      .waitForFunction(
        (ls: number[], t: string) => ls.every((l) => haloPage.listener(l).texts.includes(t)),
        { timeout: 1_000, polling: 50 },
        listeners,
        probe,
      )
      .then(() => true)
      .catch(() => false);
    if (all) return;
  }
  const state = await page.evaluate((ls) => ls.map((l) => haloPage.listener(l)), listeners);
  throw new Error(`the subscriptions never became live: ${JSON.stringify(state)}`);
}

describeBrowser('Halo from a browser', () => {
  describe('a web app on a listed origin', () => {
    let page: Page;
    beforeAll(async () => {
      page = await openApp(listedOrigin);
    }, 30_000);
    afterAll(async () => {
      await page?.evaluate(() => haloPage.close()).catch(() => undefined);
      await page?.close();
    });

    it('signs in, then calls REST and GraphQL with the token', async () => {
      expect(await page.evaluate(() => haloPage.login('alice@halo.local', 'password123'))).toBe('alice@halo.local');
      expect(await page.evaluate(() => haloPage.products())).toBeGreaterThan(0);
      expect(await page.evaluate(() => haloPage.me())).toMatch(/alice/i);
    });

    it('keeps the refresh cookie httpOnly and SameSite=Strict, and resumes the session with it after a reload', async () => {
      const cookie = (await browser!.cookies()).find((c) => c.name === 'refresh_token');
      expect(cookie).toMatchObject({ domain: 'localhost', httpOnly: true, sameSite: 'Strict' });
      // A reload forgets the access token; the SDK renews it through POST /auth/refresh and the cookie.
      await page.reload({ waitUntil: 'load' });
      await page.evaluate((gw) => haloPage.start(gw), gateway);
      expect(await page.evaluate(() => haloPage.resume())).toBe('alice@halo.local');
      expect(await page.evaluate(() => haloPage.me())).toMatch(/alice/i);
    });

    it('hears a chat message over WebSocket and over SSE', async () => {
      const chatId = `browser-${Date.now()}`;
      const ws = await page.evaluate((c) => haloPage.listen('websocket', c), chatId);
      const sse = await page.evaluate((c) => haloPage.listen('sse', c), chatId);
      await live(page, chatId, [ws, sse]);
      const text = `hello from the browser ${Math.random()}`;
      await page.evaluate((c, t) => haloPage.send(c, t), chatId, text);
      await heard(page, ws, text);
      await heard(page, sse, text);
      expect(await page.evaluate((n) => haloPage.listener(n).connected, ws)).toBe(true);
    });
  });

  describe('a web app on an origin that is not listed', () => {
    let page: Page;
    const blocked: string[] = [];
    beforeAll(async () => {
      page = await openApp(otherOrigin);
      // What DevTools shows: a request failed because of CORS (not a refused connection).
      const cdp = await page.createCDPSession();
      const urls = new Map<string, string>();
      cdp.on('Network.requestWillBeSent', (e) => void urls.set(e.requestId, e.request.url));
      cdp.on('Network.loadingFailed', (e) => void (e.corsErrorStatus && blocked.push(urls.get(e.requestId) ?? '')));
      await cdp.send('Network.enable');
    }, 30_000);
    afterAll(async () => {
      await page?.evaluate(() => haloPage.close()).catch(() => undefined);
      await page?.close();
    });

    it('cannot read an answer: the browser blocks it as a CORS error', async () => {
      expect(await page.evaluate(() => haloPage.fetchStatus('/products'))).toEqual<Failure>({
        name: 'TypeError',
        message: 'Failed to fetch',
      });
      await until('the CORS failure of /products', () => blocked.includes(`${gateway}/products`));
    });

    it('cannot sign in: the preflight is refused', async () => {
      const failed = await page.evaluate(() => haloPage.failureOf('login', 'alice@halo.local', 'password123'));
      expect(failed).toMatchObject({ name: 'HaloNetworkError' });
      await until('the CORS failure of /auth/login', () => blocked.includes(`${gateway}/auth/login`));
      expect((await browser!.cookies()).filter((c) => c.domain === '127.0.0.1')).toEqual([]);
    });

    it('has its WebSocket refused', async () => {
      // A listed page's socket connects (above); this one is closed before the upgrade, so never acknowledged.
      const i = await page.evaluate(() => haloPage.listen('websocket', 'general', 0));
      await page.waitForFunction((n: number) => haloPage.listener(n).errors.length > 0, { timeout: 15_000, polling: 50 }, i);
      const listener = await page.evaluate((n) => haloPage.listener(n), i);
      expect(listener.connected).toBe(false);
      expect(listener.errors.map((e) => e.name)).toEqual(['SubscriptionClosedError']);
      expect(listener.texts).toEqual([]);
    });
  });

  describe('the API documents', () => {
    let page: Page;
    beforeAll(async () => {
      page = await browser!.newPage();
    });
    afterAll(async () => {
      await page?.close();
    });

    it('/docs: "Try it out" executes a GET from Swagger UI', async () => {
      // Deep link: Swagger UI opens GET /hello (tag content, operationId hello).
      await page.goto(`${gateway}/docs#/content/hello`, { waitUntil: 'load' });
      const op = '#operations-content-hello';
      // Locators wait until the button is visible and has stopped moving (the block animates open).
      await page.locator(`${op} .try-out__btn`).setTimeout(15_000).click();
      const answer = page.waitForResponse((r) => r.url() === `${gateway}/hello` && r.request().method() === 'GET', { timeout: 15_000 });
      await page.locator(`${op} .execute`).setTimeout(15_000).click();
      expect((await answer).status()).toBe(200);
      const shown = await page.waitForSelector(`${op} .live-responses-table tbody .response-col_status`, { timeout: 15_000 });
      expect(await shown!.evaluate((el) => el.textContent?.trim())).toBe('200');
    });

    it('/graphql: GraphiQL loads in development and introspects the schema', async () => {
      const introspection = page.waitForResponse(
        (r) => r.url() === `${gateway}/graphql` && r.request().method() === 'POST' && (r.request().postData() ?? '').includes('__schema'),
        { timeout: 20_000 },
      );
      await page.goto(`${gateway}/graphql`, { waitUntil: 'load' });
      await page.waitForSelector('.graphiql-container', { timeout: 20_000 });
      const answer = await introspection;
      expect(answer.status()).toBe(200);
      expect(((await answer.json()) as { data?: { __schema?: unknown } }).data?.__schema).toBeDefined();
    });

    it('/graphql: GraphiQL opens on the example query, naming its own origin, and Run answers with data', async () => {
      // A fresh profile: no tabs a previous visit stored.
      const context = await browser!.createBrowserContext();
      const ide = await context.newPage();
      try {
        ide.on('pageerror', (err) => void pageErrors.push(`graphiql: ${(err as Error).message}`));
        await ide.goto(`${gateway}/graphql`, { waitUntil: 'load' });
        await ide.waitForSelector('.graphiql-query-editor .view-lines', { timeout: 20_000 });
        // The sign-in hint names the gateway as the browser reached it (localhost and this port).
        const editor = () => textOf(ide, '.graphiql-query-editor .view-lines');
        await untilAsync('the example query in the editor', async () => (await editor()).includes(`curl -s -X POST ${gateway}/auth/login`));
        const run = ide.waitForResponse(
          (r) => r.url() === `${gateway}/graphql` && r.request().method() === 'POST' && (r.request().postData() ?? '').includes('posts'),
          { timeout: 15_000 },
        );
        // Nothing typed: Run executes what the page opened with.
        await ide.locator('.graphiql-execute-button').setTimeout(15_000).click();
        const answer = await run;
        expect(answer.status()).toBe(200);
        // The example defers each post's author: GraphiQL asks for parts and gets them (a stream,
        // whose body the DevTools protocol does not keep: what counts is the pane).
        expect(answer.headers()['content-type']).toMatch(/^multipart\/mixed/);
        // And the result pane shows them merged, the deferred authors included.
        await untilAsync('the answer in the result pane', async () => {
          const pane = await textOf(ide, '.graphiql-response');
          return pane.includes('"edges"') && pane.includes('"author"');
        });
        expect(await textOf(ide, '.graphiql-response')).not.toContain('"errors"');
      } finally {
        await context.close();
      }
    });
  });

  it('throws no uncaught error in any page of the web app', () => {
    expect(pageErrors).toEqual([]);
  });
});
