import { randomBytes } from 'node:crypto';

/**
 * The callers of the GraphQL benches (`npm run bench`, `npm run bench:ab`, the subgraph bench):
 * real users registered and logged in through the gateway's REST routes, each with orders, so
 * `me { orders { product user } }` fetches from payments, catalog and content for every caller.
 * One token per load connection (src/per-connection.ts) makes every connection its own caller, as
 * real traffic is: no gateway can share a subgraph fetch between two of them.
 *
 * The auth service must allow the registrations from one address and keep the tokens valid for
 * the run: `REGISTER_MAX_PER_IP` ≥ n, `ACCESS_TOKEN_TTL` longer than the run (see callerAuthEnv).
 */
export interface Caller {
  name: string;
  token: string;
}

/** What the auth service needs for `n` bench callers: room to register them from one address, tokens that outlive a long run. */
export function callerAuthEnv(n: number): Record<string, string> {
  return { REGISTER_MAX_PER_IP: String(n + 10), ACCESS_TOKEN_TTL: '24h' };
}

/** The caller's 5 orders (products 1–5), created through the gateway; idempotent (client_order_id). */
export async function ensureOrders(gatewayUrl: string, authorization: string, log?: (line: string) => void): Promise<void> {
  for (const productId of [1, 2, 3, 4, 5]) {
    const res = await fetch(`${gatewayUrl}/api/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization },
      body: JSON.stringify({ product_id: productId, client_order_id: `bench-${productId}` }),
    });
    if (res.status !== 201 && res.status !== 200) throw new Error(`POST /api/orders answered ${res.status}: ${await res.text()}`);
  }
  log?.('bench: the caller has 5 orders');
}

/** N users registered and logged in through the gateway's REST routes, each with 5 orders: N distinct callers. */
export async function registerCallers(gatewayUrl: string, n: number, log: (line: string) => void, prefix = 'bench:ab'): Promise<Caller[]> {
  const run = randomBytes(4).toString('hex');
  const post = async (path: string, body: unknown, want: number) => {
    const res = await fetch(`${gatewayUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status !== want) throw new Error(`POST ${path} answered ${res.status} (wanted ${want}): ${text.slice(0, 300)}`);
    return JSON.parse(text) as unknown;
  };
  const one = async (i: number): Promise<Caller> => {
    const name = `AB Caller ${i}`;
    const email = `ab-${run}-${i}@bench.halo.test`;
    const password = randomBytes(12).toString('base64url');
    await post('/auth/register', { name, email, password }, 201);
    const { accessToken } = (await post('/auth/login', { email, password }, 200)) as { accessToken: string };
    await ensureOrders(gatewayUrl, `Bearer ${accessToken}`);
    return { name, token: accessToken };
  };
  const callers: Caller[] = [];
  // A few at a time: argon2id hashing is the slow part, and every server shares one CPU.
  for (let i = 0; i < n; i += 4) callers.push(...(await Promise.all(Array.from({ length: Math.min(4, n - i) }, (_, k) => one(i + k)))));
  log(`${prefix}: ${n} callers registered and logged in through the gateway, 5 orders each`);
  return callers;
}
