import { createLogger, type Logger } from '@halo/kit/logging';
import { openTestDb, postGraphQL, TEST_JWT_SECRET, TEST_SERVICE_ENV, testIdentityEnv, type TestDb } from '@halo/kit/testing';
// The real content service through its package (built by `npm run build`), never its sources.
import { contentService, type ContentService } from '@halo/content';
import { authService, type AuthService } from '../src/service';

export { TEST_JWT_SECRET };

const COMMON = TEST_SERVICE_ENV;

/** Tests register many users from one address: the registration limit is raised (tests set their own). */
export const authTestConfig = (contentGrpcPort: number, extra: Record<string, string> = {}) =>
  authService.loadConfig({
    ...COMMON,
    ...testIdentityEnv('auth'),
    REGISTER_MAX_PER_IP: '100000',
    CONTENT_GRPC_ADDR: `127.0.0.1:${contentGrpcPort}`,
    ...extra,
  });

/** The real content service (it owns the users) and the real auth service, in-process, each on a throwaway schema. */
export interface TestSystem {
  content: ContentService;
  contentDb: TestDb;
  auth: AuthService;
  authDb: TestDb;
  logger: Logger;
  /** `http://127.0.0.1:<port>` of auth's REST + GraphQL server. */
  base: string;
  /** Auth's gRPC address. */
  grpcAddr: string;
  /** Starts another auth instance on the same schemas (e.g. with other settings); stopped by close(). */
  startAuth(extra?: Record<string, string>): Promise<{ service: AuthService; base: string }>;
  /** Stops both services, then drops both schemas. */
  close(): Promise<void>;
}

export async function startTestSystem(
  authEnv: Record<string, string> = {},
  contentEnv: Record<string, string> = {},
  /** Auth's logger (e.g. a capturing one); content's stays silent. */
  logger: Logger = createLogger('auth-test', 'silent'),
): Promise<TestSystem> {
  const contentLogger = createLogger('content-test', 'silent');
  const contentDb = await openTestDb('content');
  const authDb = await openTestDb('auth');
  const stops: (() => Promise<void>)[] = [];
  const close = async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await authDb.drop();
    await contentDb.drop();
  };
  try {
    const content = await contentService.start(
      contentService.loadConfig({ ...COMMON, ...testIdentityEnv('content'), ...contentEnv }),
      contentLogger,
      { db: contentDb },
    );
    stops.push(() => content.stop());
    const startAuth = async (extra: Record<string, string> = {}) => {
      const service = await authService.start(authTestConfig(content.grpcPort, { ...authEnv, ...extra }), logger, { db: authDb });
      stops.push(() => service.stop());
      return { service, base: `http://127.0.0.1:${service.httpPort}` };
    };
    const { service: auth, base } = await startAuth();
    return { content, contentDb, auth, authDb, logger, base, grpcAddr: `127.0.0.1:${auth.grpcPort}`, startAuth, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** `body` defaults to `any`: every route has its own shape and the tests assert that shape themselves. */
export interface HttpResult<B = any> {
  status: number;
  headers: Headers;
  body: B;
}

/** One HTTP request with a JSON body (when given); the body comes back parsed when it is JSON. */
export async function http<B = any>(
  base: string,
  method: string,
  path: string,
  opts: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<HttpResult<B>> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}), ...opts.headers },
    body: opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body),
  });
  const text = await res.text();
  const isJson = res.headers.get('content-type')?.includes('application/json');
  return { status: res.status, headers: res.headers, body: (isJson && text ? JSON.parse(text) : text) as B };
}

export const post = <B = any>(base: string, path: string, body?: unknown, headers?: Record<string, string>) =>
  http<B>(base, 'POST', path, { body, headers });

let counter = 0;
/** A fresh, unique email for one test (schemas are per file, but tests in a file share them). */
export const uniqueEmail = (tag = 'user') => `${tag}-${Date.now().toString(36)}-${++counter}@example.com`;

export async function register(base: string, name: string, email: string, password: string) {
  const res = await post(base, '/auth/register', { name, email, password });
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.user as { id: number; name: string; email: string };
}

/** The refresh token set by a response, or null (the raw header is `res.headers.get('set-cookie')`). */
export function refreshCookieOf(res: HttpResult): string | null {
  const m = /(?:^|,\s*)refresh_token=([^;]*)/.exec(res.headers.get('set-cookie') ?? '');
  return m ? m[1]! : null;
}

export async function login(base: string, email: string, password: string, headers: Record<string, string> = {}) {
  const res = await post(base, '/auth/login', { email, password }, headers);
  return { ...res, refreshToken: refreshCookieOf(res) };
}

/** Registers a user and logs them in: their id, access token and refresh token. */
export async function signUp(base: string, opts: { name?: string; email?: string; password?: string } = {}) {
  const email = opts.email ?? uniqueEmail();
  const password = opts.password ?? 'correct horse battery';
  const user = await register(base, opts.name ?? 'Tester', email, password);
  const res = await login(base, email, password);
  if (res.status !== 200) throw new Error(`login failed: ${res.status}`);
  return { user, email, password, token: res.body.token as string, refreshToken: res.refreshToken! };
}

/** Promotes a user in content's own table (the only way to make an admin; content owns roles). */
export async function makeAdmin(sys: TestSystem, userId: number): Promise<void> {
  await sys.contentDb.query(`UPDATE users SET role = 'admin' WHERE id = $1`, [userId]);
}

/** An admin with a fresh token (the role is read from content at login). */
export async function signUpAdmin(sys: TestSystem) {
  const u = await signUp(sys.base, { name: 'Root' });
  await makeAdmin(sys, u.user.id);
  const res = await login(sys.base, u.email, u.password);
  return { ...u, token: res.body.token as string, refreshToken: res.refreshToken! };
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
export const cookie = (refreshToken: string) => ({ cookie: `refresh_token=${refreshToken}` });

export function decodeJwt(token: string): { header: Record<string, unknown>; payload: Record<string, any> } {
  const [h, p] = token.split('.');
  return {
    header: JSON.parse(Buffer.from(h!, 'base64url').toString('utf8')) as Record<string, unknown>,
    payload: JSON.parse(Buffer.from(p!, 'base64url').toString('utf8')) as Record<string, any>,
  };
}

/** One GraphQL operation against auth's subgraph. */
export const gql = (base: string, query: string, headers: Record<string, string> = {}) => postGraphQL(base, query, undefined, headers);
