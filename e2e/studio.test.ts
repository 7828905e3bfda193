import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import { describeWithChromium, launchChromium } from './browser/chromium';
import { runNodeScript } from '@halo/kit/testing';
import { startE2ESystem, until } from './helpers';

/**
 * Halo Studio in a real browser (Debian's Chromium) against a running system whose registry runs
 * in development (open on loopback, as `npm start`): every page opens and passes axe-core with no
 * serious or critical violation; a publish through the real CLI appears in History and the
 * gateways' composition on Overview; a check refused for a field clients use shows the operation,
 * client and version that blocked it; a field's usage plot follows the traffic sent. Screenshots
 * of each page go to .data/e2e/studio/ (CI keeps them as artifacts).
 */
const describeBrowser = describeWithChromium('e2e/studio.test.ts');
const ROOT = resolve(__dirname, '..');
const SHOTS = join(ROOT, '.data/e2e/studio');
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

let sys: Awaited<ReturnType<typeof startE2ESystem>> | undefined;
let browser: Browser | undefined;
let studio: string;
let page: Page;

const cli = (...args: string[]) =>
  runNodeScript(resolve(ROOT, 'tools/dist/subgraph.js'), [...args, '--registry', sys!.direct('registry')], { cwd: ROOT });
const operationsCli = (...args: string[]) =>
  runNodeScript(resolve(ROOT, 'tools/dist/operations.js'), [...args, '--registry', sys!.direct('registry')], { cwd: ROOT });

/** What the page shows, as a person reads it. */
const bodyText = async () => String(await page.evaluate('document.body.innerText'));

/** Opens a Studio page: 200, then axe-core's serious and critical violations (none expected), then a screenshot. */
async function open(path: string, shot: string): Promise<string> {
  const res = await page.goto(`${studio}${path}`, { waitUntil: 'load' });
  expect({ path, status: res?.status() }).toEqual({ path, status: 200 });
  await page.addScriptTag({ content: AXE });
  const violations: string[] = await page.evaluate(async () => {
    const result = await (
      globalThis as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> } }
    ).axe.run();
    return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.nodes.length})`);
  });
  expect({ path, violations }).toEqual({ path, violations: [] });
  await page.screenshot({ path: join(SHOTS, `${shot}.png`), fullPage: true });
  return bodyText();
}

const gql = async (query: string, headers: Record<string, string>) => {
  const res = await fetch(`${sys!.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query }),
  });
  return res.status;
};

describeBrowser('Halo Studio in a browser', () => {
  beforeAll(async () => {
    browser = await launchChromium();
    mkdirSync(SHOTS, { recursive: true });
    sys = await startE2ESystem({
      postgres: true,
      envFor: { registry: { HALO_ENV: 'development' }, gateway: { REGISTRY_POLL_MS: '300', USAGE_FLUSH_MS: '300' } },
    });
    studio = sys.direct('registry');
    page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    // axe is injected as a script: the Studio's CSP (no script at all) would refuse it.
    await page.setBypassCSP(true);
    // Traffic from two versions of one app, and a web client, for the usage pages.
    for (let i = 0; i < 6; i++) {
      expect(
        await gql('query StorePrices { products(limit: 2) { data { id price } } }', {
          'apollographql-client-name': 'ios-app',
          'apollographql-client-version': i < 4 ? '2.3.1' : '2.4.0',
        }),
      ).toBe(200);
    }
    expect(await gql('query WebList { products(limit: 1) { data { name } } }', { 'apollographql-client-name': 'web' })).toBe(200);
    // Sent once, but a page of 20 products: the costliest per request, the least busy.
    expect(await gql('query WebCatalog { products(limit: 20) { data { id } } }', { 'apollographql-client-name': 'web' })).toBe(200);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await sys?.stop();
  }, 60_000);

  it('Overview: every service and the gateway polling, with the composition it serves', async () => {
    const text = await open('/studio', 'overview');
    for (const s of ['auth', 'catalog', 'chat', 'content', 'payments']) expect(text).toContain(s);
    expect(text).toMatch(/Composition \d+/);
    expect(text).toMatch(/up/);
  });

  it('Schema: types by kind, a type with owners, access and usage; unused fields marked', async () => {
    expect(await open('/studio/schema', 'schema')).toContain('Product');
    const product = await open('/studio/schema/Query', 'schema-query');
    expect(product).toContain('products');
    expect(product).toContain('catalog');
    expect(product).toContain('unused');
  });

  it('Usage: the operations and the clients with their versions; a field plotted by client', async () => {
    const usage = await until('usage recorded', async () => {
      const text = await open('/studio/usage', 'usage');
      return text.includes('ios-app') && text.includes('2.4.0') && text.includes('WebCatalog') ? text : null;
    });
    expect(usage).toContain('StorePrices');
    expect(usage).toContain('2.3.1');
    // By the cost the gateway estimated per request (a page's size drives it), not by requests.
    const tableAfter = (title: string) =>
      page.$$eval(
        'h2',
        (headings, t) => {
          let next = headings.find((h) => h.textContent === t)?.nextElementSibling;
          while (next && next.tagName !== 'TABLE') next = next.nextElementSibling;
          return [...(next?.querySelectorAll('tbody th code') ?? [])].map((c) => c.textContent);
        },
        title,
      );
    const mine = (names: (string | null)[]) => names.filter((n) => n === 'StorePrices' || n === 'WebList' || n === 'WebCatalog');
    expect(mine(await tableAfter('Top operations by requests'))).toEqual(['StorePrices', expect.any(String), expect.any(String)]);
    expect(mine(await tableAfter('Top operations by cost'))).toEqual(['WebCatalog', 'StorePrices', 'WebList']);
    await open('/studio/usage/Product.price', 'usage-product-price');
    expect(await page.$eval('svg[role=img] desc', (d) => d.textContent)).toMatch(/ios-app 2\.3\.1: 4; ios-app 2\.4\.0: 2/);
    expect(await bodyText()).toContain('StorePrices');
  });

  it('History: a publish through the CLI appears, compared side by side; Overview shows the new composition served', async () => {
    const sdl = readFileSync(resolve(ROOT, 'services/catalog/schema.graphql'), 'utf8').replace(
      /(type Product @key[^{]*\{)/,
      '$1\n  studioSku: String',
    );
    const file = join(SHOTS, 'catalog-sku.graphql');
    writeFileSync(file, sdl);
    const published = await cli('publish', '--service', 'catalog', '--schema', file, '--url', sys!.direct('catalog'));
    expect([published.code, published.stderr]).toEqual([0, '']);
    const history = await open('/studio/services/catalog', 'history-catalog');
    expect(history).toContain("Field 'studioSku' was added");
    await page.click('a[href$="...2"]');
    await page.waitForSelector('.diff');
    expect(await page.$eval('.diff .add', (e) => e.textContent)).toContain('studioSku: String');
    await page.screenshot({ path: join(SHOTS, 'diff-catalog.png'), fullPage: true });
    const composition = /composition (\d+)/.exec(published.stdout)![1]!;
    await until('the gateway serving it on Overview', async () => {
      const text = await open('/studio', 'overview-after-publish');
      return new RegExp(`Composition ${composition}\\b`).test(text) && !text.includes('not the current one') ? text : null;
    });
  });

  it('Checks: a refused check names the operation, client and version that use the field', async () => {
    const sdl = readFileSync(resolve(ROOT, 'services/catalog/schema.graphql'), 'utf8').replace(/\n\s*price: Float!?[^\n]*\n/, '\n');
    const file = join(SHOTS, 'catalog-no-price.graphql');
    writeFileSync(file, sdl);
    const check = await cli('check', '--service', 'catalog', '--schema', file);
    expect(check.code).toBe(1);
    const list = await open('/studio/checks', 'checks');
    expect(list).toContain('refused');
    await page.click('tbody a[href^="/studio/checks/"]');
    await page.waitForSelector('h1');
    const detail = await bodyText();
    expect(detail).toContain('StorePrices');
    expect(detail).toMatch(/ios-app 2\.3\.1/);
    await open(new URL(page.url()).pathname, 'check-refused');
  });

  it('Clients: each app version’s registered operations, active or retired, and one version’s list', async () => {
    const manifest = join(SHOTS, 'ios-operations.json');
    writeFileSync(manifest, JSON.stringify({ q1: 'query StorePrices { products(limit: 2) { data { id price } } }' }));
    expect((await operationsCli('push', '--client', 'ios-app', '--version', '2.3.1', manifest)).code).toBe(0);
    expect((await operationsCli('push', '--client', 'ios-app', '--version', '2.2.0', manifest)).code).toBe(0);
    expect((await operationsCli('retire', '--client', 'ios-app', '--version', '2.2.0')).code).toBe(0);
    const list = await open('/studio/clients', 'clients');
    expect(list).toMatch(/2\.3\.1\s+active/);
    expect(list).toMatch(/2\.2\.0\s+retired/);
    await page.click('a[href="/studio/clients/ios-app/2.3.1"]');
    await page.waitForSelector('h1');
    const version = await open(new URL(page.url()).pathname, 'client-version');
    expect(version).toContain('StorePrices');
    expect(version).toContain('products(limit: 2)');
  });
});
