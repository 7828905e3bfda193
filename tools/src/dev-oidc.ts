import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { DEV_OIDC_PORT, env, loadConfig, z } from '@halo/kit/config';
import { createLogger, type Logger } from '@halo/kit/logging';
import { closeHttpServer, Lifecycle, listen, runService } from '@halo/kit/process';

/**
 * DEV-ONLY OpenID Provider for the embedded mode (`npm start` runs it as provider `dev`): a real
 * oidc-provider on loopback, so the auth service's OAuth 2.0 / OIDC code flow (state, nonce, PKCE,
 * id_token signature checked against the JWKS) runs end to end without an outside account.
 *
 * Never for production, and built so it cannot pass for one: it listens on loopback only, keeps
 * everything in memory, and signs with keys (id_token RS256 key, cookie keys) generated at start.
 * Anyone can sign in as anyone: the login form asks only for an email. The demo users
 * (alice@halo.local, bob@halo.local, admin@halo.local) and ANY other address are accepted, always
 * with email_verified true; a bare name such as `carol` means carol@halo.local. The subject (sub) is
 * the lower-cased email. Login and consent are one step: signing in grants the requested scopes.
 *
 * The provider keeps a browser session (single sign-on) like a real one does; to sign in as
 * someone else, open `<issuer>/session/end` first.
 *
 * Non-interactive use (tests): follow the redirects from the authorization URL to
 * `GET /interaction/<uid>` (the form), then `POST /interaction/<uid>/login` with
 * `email=<address>` (form-encoded), keeping the provider's cookies; the provider then redirects to
 * the client's redirect_uri with code and state. `POST /interaction/<uid>/abort` ends the
 * authorization with error=access_denied, like a "Cancel" button on a real provider.
 */

export interface DevAccount {
  email: string;
  name: string;
}

export const DEV_ACCOUNTS: readonly DevAccount[] = [
  { email: 'alice@halo.local', name: 'Alice' },
  { email: 'bob@halo.local', name: 'Bob' },
  { email: 'admin@halo.local', name: 'Admin' },
];

export interface DevOidcOptions {
  host: string;
  /** 0 picks a free port; the issuer then carries the real one. */
  port: number;
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
  /** Known accounts (their display names); any other email signs in too. Default DEV_ACCOUNTS. */
  accounts?: readonly DevAccount[];
  /** The public issuer when the provider is reached through a proxy; default `http://<host>:<port>`. */
  issuer?: string;
  logger?: Logger;
}

export interface DevOidcProvider {
  issuer: string;
  port: number;
  close(): Promise<void>;
}

// oidc-provider 8 ships no type declarations (and @types/oidc-provider is not a dependency): this
// is the small part of its API used here. It is an ES module, loaded through require(esm).
interface KoaContext {
  type: string;
  body: unknown;
  host: string;
}
interface OidcError extends Error {
  statusCode?: number;
  error?: string;
  error_description?: string;
}
interface Interaction {
  uid: string;
  prompt: { name: string };
  // The authorization request's parameters; oidc-provider has checked that `scope` is a string.
  params: Record<string, unknown> & { scope?: string };
  session?: { accountId?: string };
  grantId?: string;
}
interface Grant {
  addOIDCScope(scope: string): void;
  save(): Promise<string>;
}
interface Provider {
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<Interaction>;
  interactionFinished(
    req: IncomingMessage,
    res: ServerResponse,
    result: Record<string, unknown>,
    options?: { mergeWithLastSubmission?: boolean },
  ): Promise<void>;
  Grant: { new (init: { accountId: string; clientId: string }): Grant; find(id: string): Promise<Grant | undefined> };
  on(event: string, listener: (ctx: unknown, err: OidcError) => void): void;
}
interface OidcProviderModule {
  Provider: new (issuer: string, configuration: Record<string, unknown>) => Provider;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports -- an untyped ES module loaded through require(esm), typed by the interfaces above
const { Provider: OidcProvider } = require('oidc-provider') as OidcProviderModule;

const SCOPES = ['openid', 'email', 'profile'];
const MAX_FORM_BYTES = 16 * 1024;

export async function startDevOidcProvider(opts: DevOidcOptions): Promise<DevOidcProvider> {
  const logger = opts.logger ?? createLogger('dev-oidc', 'silent');
  const names = new Map((opts.accounts ?? DEV_ACCOUNTS).map((a) => [a.email.toLowerCase(), a.name]));
  // oidc-provider checks client metadata only when the client is first used: fail at start instead.
  const bad = opts.redirectUris.find((u) => !URL.canParse(u) || !/^https?:$/.test(new URL(u).protocol));
  if (bad !== undefined || !opts.redirectUris.length) throw new TypeError(`invalid redirect URI: ${JSON.stringify(bad ?? '')}`);
  const server = createServer();
  const port = await listen(server, opts.port, opts.host);
  const issuer = opts.issuer ?? `http://${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${port}`;
  let provider: Provider;
  try {
    provider = createProvider(issuer, opts, names);
  } catch (err) {
    // E.g. a client metadata error (a bad redirect URI): stop listening before reporting it.
    await closeHttpServer(server, 0);
    throw err;
  }
  provider.on('server_error', (_ctx, err) => logger.error({ err }, 'dev OIDC provider error'));
  for (const event of ['authorization.error', 'grant.error', 'end_session.error']) {
    provider.on(event, (_ctx, err) =>
      logger.warn({ event, error: err.error, description: err.error_description }, 'OIDC request rejected'),
    );
  }

  const oidc = provider.callback();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const m = /^\/interaction\/([\w-]+)(?:\/(login|abort))?$/.exec(new URL(req.url ?? '/', 'http://x').pathname);
    if (!m) return oidc(req, res);
    interaction(provider, names, req, res, m[2]).catch((err: unknown) => {
      const e = err as OidcError;
      if (!e.statusCode || e.statusCode >= 500) logger.error({ err }, 'dev OIDC interaction failed');
      if (res.headersSent) return res.end();
      html(res, e.statusCode ?? 500, page('Sign-in failed', `<p>${escapeHtml(e.error_description ?? 'Something went wrong.')}</p>`));
    });
  });
  logger.info({ issuer }, 'dev OpenID provider listening (development only)');
  return { issuer, port, close: () => closeHttpServer(server, 2_000) };
}

/** The provider itself: one confidential client, code flow with PKCE S256, the dev accounts. */
function createProvider(issuer: string, opts: DevOidcOptions, names: ReadonlyMap<string, string>): Provider {
  return new OidcProvider(issuer, {
    clients: [
      {
        client_id: opts.clientId,
        client_secret: opts.clientSecret,
        redirect_uris: opts.redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        // The spec's token request posts client_id and client_secret in the body.
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    responseTypes: ['code'],
    pkce: { methods: ['S256'], required: () => true },
    scopes: ['openid'],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    // Put the scope's claims in the id_token itself (the default keeps them for userinfo only when
    // an access token is issued too), so a client can work from the verified id_token alone.
    conformIdTokenClaims: false,
    // eslint-disable-next-line @typescript-eslint/require-await -- oidc-provider awaits findAccount and claims; the accounts here are in memory
    async findAccount(_ctx: unknown, sub: string) {
      const account = accountFor(sub, names);
      // eslint-disable-next-line @typescript-eslint/require-await -- see findAccount
      return account && { accountId: account.email, claims: async () => ({ sub: account.email, ...claimsOf(account) }) };
    },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    features: {
      devInteractions: { enabled: false },
      rpInitiatedLogout: { enabled: true, logoutSource, postLogoutSuccessSource },
    },
    jwks: { keys: [signingKey()] },
    // Fresh keys per start: restarting signs everyone out, which is fine in development. On plain
    // http oidc-provider never marks its cookies Secure (it does so only when the request is https);
    // `lax` instead of the default `none` keeps the session cookie in browsers that drop
    // SameSite=None cookies without Secure.
    cookies: {
      keys: [randomBytes(32).toString('base64url')],
      long: { signed: true, httpOnly: true, sameSite: 'lax' },
      short: { signed: true, httpOnly: true, sameSite: 'lax' },
    },
    ttl: { AccessToken: 3600, AuthorizationCode: 60, IdToken: 3600, Interaction: 600, Session: 86_400, Grant: 86_400 },
    adapter: memoryAdapter(),
    renderError,
    clientBasedCORS: () => false,
  });
}

/** The interaction routes: the login form, its submission (login + consent in one step), cancel. */
async function interaction(
  provider: Provider,
  names: Map<string, string>,
  req: IncomingMessage,
  res: ServerResponse,
  action: string | undefined,
): Promise<void> {
  const details = await provider.interactionDetails(req, res);
  const method = req.method ?? 'GET';
  if (!action && (method === 'GET' || method === 'HEAD')) {
    // Already signed in, consent missing (e.g. a new scope): the dev client is trusted, grant it.
    if (details.prompt.name === 'consent' && details.session?.accountId) {
      const grantId = await grantFor(provider, details, details.session.accountId);
      return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
    }
    const hint = typeof details.params.login_hint === 'string' ? details.params.login_hint : '';
    return html(res, 200, loginPage(details.uid, hint, ''));
  }
  if (method !== 'POST' || !action) return html(res, 405, page('Method not allowed', ''), { Allow: 'GET, HEAD' });
  if (action === 'abort') {
    const result = { error: 'access_denied', error_description: 'End-User aborted interaction' };
    return provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
  }
  const form = new URLSearchParams(await readBody(req));
  const account = accountFor(form.get('email') ?? '', names);
  if (!account) return html(res, 400, loginPage(details.uid, form.get('email') ?? '', 'Enter an email address.'));
  const grantId = await grantFor(provider, details, account.email);
  const result = { login: { accountId: account.email }, consent: { grantId } };
  return provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
}

/** A grant covering every requested scope the provider supports (the claims parameter is off). */
async function grantFor(provider: Provider, details: Interaction, accountId: string): Promise<string> {
  const clientId = String(details.params.client_id);
  const existing = details.grantId ? await provider.Grant.find(details.grantId) : undefined;
  const grant = existing ?? new provider.Grant({ accountId, clientId });
  const requested = (details.params.scope ?? '').split(' ');
  grant.addOIDCScope(SCOPES.filter((s) => requested.includes(s)).join(' '));
  return grant.save();
}

/** The login name is the email; a bare name gets `@halo.local`. Undefined for something unusable. */
export function accountFor(login: string, names: ReadonlyMap<string, string> = new Map()): DevAccount | undefined {
  let email = login.trim().toLowerCase();
  if (email && !email.includes('@')) email = `${email}@halo.local`;
  if (email.length > 254 || !/^[^\s@<>"'&]+@[^\s@<>"'&]+$/.test(email)) return undefined;
  return { email, name: names.get(email) ?? nameFromEmail(email) };
}

/** `carol.smith@example.com` → `Carol Smith`. */
export function nameFromEmail(email: string): string {
  const local = email.split('@')[0] ?? email;
  const words = local.split(/[._+-]+/).filter(Boolean);
  return words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join(' ') || local;
}

const claimsOf = (a: DevAccount) => ({ email: a.email, email_verified: true, name: a.name });

function signingKey(): Record<string, unknown> {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), alg: 'RS256', use: 'sig' };
}

/**
 * In-memory storage for the provider's models, one store per provider instance (the library's
 * own quick-start adapter is one store per process, and warns on every start).
 */
function memoryAdapter() {
  type Entry = { payload: Record<string, unknown>; expiresAt: number };
  const store = new Map<string, Entry>();
  const live = (key: string | undefined) => {
    const e = key === undefined ? undefined : store.get(key);
    if (e && e.expiresAt <= Date.now()) store.delete(key!);
    return e && e.expiresAt > Date.now() ? e : undefined;
  };
  const pointer = (key: string) => live(key)?.payload.id as string | undefined;
  return (model: string) => {
    const key = (id: string) => `${model}:${id}`;
    /* eslint-disable @typescript-eslint/require-await -- oidc-provider's Adapter interface is async; this store is an in-memory Map */
    return {
      async upsert(id: string, payload: Record<string, unknown>, expiresIn: number) {
        const expiresAt = Date.now() + expiresIn * 1000;
        // Drop expired entries now and then, so a long dev session does not grow without bound.
        if (store.size > 1000) for (const k of store.keys()) live(k);
        store.set(key(id), { payload, expiresAt });
        if (typeof payload.uid === 'string' && model === 'Session') store.set(`SessionUid:${payload.uid}`, { payload: { id }, expiresAt });
        if (typeof payload.userCode === 'string') store.set(`UserCode:${payload.userCode}`, { payload: { id }, expiresAt });
      },
      async find(id: string) {
        return live(key(id))?.payload;
      },
      async findByUid(uid: string) {
        const id = pointer(`SessionUid:${uid}`);
        return id === undefined ? undefined : live(key(id))?.payload;
      },
      async findByUserCode(userCode: string) {
        const id = pointer(`UserCode:${userCode}`);
        return id === undefined ? undefined : live(key(id))?.payload;
      },
      async consume(id: string) {
        const e = live(key(id));
        if (e) e.payload.consumed = Math.floor(Date.now() / 1000);
      },
      async destroy(id: string) {
        store.delete(key(id));
      },
      async revokeByGrantId(grantId: string) {
        for (const [k, e] of store) if (e.payload.grantId === grantId) store.delete(k);
      },
    };
    /* eslint-enable @typescript-eslint/require-await */
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_FORM_BYTES) {
        reject(Object.assign(new Error('form too large'), { statusCode: 413, error_description: 'Form too large.' }));
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function html(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
    ...headers,
  });
  res.end(body);
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(title: string, body: string): string {
  return `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font-family:system-ui,sans-serif;max-width:22rem;margin:3rem auto;padding:0 1rem}
input,button{font:inherit;width:100%;box-sizing:border-box;padding:.5rem;margin:.25rem 0}
.note{color:#555;font-size:.9rem}.error{color:#b00020}</style></head>
<body><h1>${escapeHtml(title)}</h1>${body}<p class="note">Halo dev OpenID provider: development only.</p></body></html>`;
}

function loginPage(uid: string, email: string, error: string): string {
  return page(
    'Sign in',
    `${error ? `<p class="error">${escapeHtml(error)}</p>` : ''}
<form method="post" action="/interaction/${escapeHtml(uid)}/login">
<label for="email">Email</label>
<input id="email" name="email" type="text" autocomplete="username" autofocus required value="${escapeHtml(email)}">
<button type="submit">Sign in</button></form>
<form method="post" action="/interaction/${escapeHtml(uid)}/abort"><button type="submit">Cancel</button></form>
<p class="note">Demo users: ${DEV_ACCOUNTS.map((a) => escapeHtml(a.email)).join(', ')}. Any other email signs in too,
with a verified address; no password.</p>`,
  );
}

// eslint-disable-next-line @typescript-eslint/require-await -- an oidc-provider hook, which it awaits
async function renderError(ctx: KoaContext, out: { error?: string; error_description?: string }): Promise<void> {
  ctx.type = 'html';
  ctx.body = page('Sign-in failed', `<p>${escapeHtml(out.error ?? 'error')}: ${escapeHtml(out.error_description ?? '')}</p>`);
}

// eslint-disable-next-line @typescript-eslint/require-await -- an oidc-provider hook, which it awaits
async function logoutSource(ctx: KoaContext, form: string): Promise<void> {
  ctx.body = page(
    'Sign out',
    `<p>Sign out of the dev provider at ${escapeHtml(ctx.host)}?</p>${form}
<button autofocus type="submit" form="op.logoutForm" value="yes" name="logout">Sign out</button>
<button type="submit" form="op.logoutForm">Stay signed in</button>`,
  );
}

// eslint-disable-next-line @typescript-eslint/require-await -- an oidc-provider hook, which it awaits
async function postLogoutSuccessSource(ctx: KoaContext): Promise<void> {
  ctx.body = page('Signed out', '<p>You are signed out of the dev provider.</p>');
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);
const redirectUris = z.string().transform((value, ctx) => {
  const uris = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!uris.length || uris.some((u) => !URL.canParse(u))) {
    ctx.addIssue({ code: 'custom', message: 'must be a comma-separated list of URLs' });
    return z.NEVER;
  }
  return uris;
});

/** The provider's environment: the launcher sets all of it (docs/configuration.md lists it). */
export const devOidcConfigShape = {
  HTTP_HOST: env
    .str('127.0.0.1')
    .refine((h) => LOOPBACK.has(h), 'must be a loopback address (dev only)')
    .describe('where the dev OpenID provider listens: a loopback address only (it lets anyone sign in as anyone)'),
  HTTP_PORT: env.port(DEV_OIDC_PORT).describe("the HTTP server's port (`0`: any free port)"),
  DEV_OIDC_CLIENT_ID: z.string({ message: 'is required' }).min(1).describe("the one client it serves: auth's `OAUTH_DEV_CLIENT_ID`"),
  DEV_OIDC_CLIENT_SECRET: z.string({ message: 'is required' }).min(1).describe("that client's secret: auth's `OAUTH_DEV_CLIENT_SECRET`"),
  DEV_OIDC_REDIRECT_URIS: redirectUris.describe("that client's redirect URIs, comma-separated (auth's `OAUTH_DEV_REDIRECT_URI`)"),
  DEV_OIDC_ISSUER: env.url().describe('the issuer it announces, when reached through a proxy; unset: `http://<HTTP_HOST>:<HTTP_PORT>`'),
  LOG_LEVEL: env.logLevel(),
  SHUTDOWN_TIMEOUT_MS: env.int(5_000).describe('grace period to drain in-flight requests on SIGTERM'),
};

/** The provider's environment (the launcher sets it); a bad value names its variable. */
export function loadDevOidcConfig(vars: Record<string, string | undefined> = process.env) {
  return loadConfig(devOidcConfigShape, vars);
}

export function main(): Promise<void> {
  return runService(
    'dev-oidc',
    () => loadDevOidcConfig(),
    async (config, logger) => {
      const lifecycle = new Lifecycle(logger);
      const oidc = await startDevOidcProvider({
        host: config.HTTP_HOST,
        port: config.HTTP_PORT,
        clientId: config.DEV_OIDC_CLIENT_ID,
        clientSecret: config.DEV_OIDC_CLIENT_SECRET,
        redirectUris: config.DEV_OIDC_REDIRECT_URIS,
        ...(config.DEV_OIDC_ISSUER ? { issuer: config.DEV_OIDC_ISSUER } : {}),
        logger,
      });
      lifecycle.register('dev OIDC provider', () => oidc.close());
      return { lifecycle };
    },
  );
}

if (require.main === module) void main();
