import { requireAdmin, type Caller } from '@halo/kit/auth';
import type { Role } from '@halo/kit/domain';
import { forbidden, isHaloError, notFound, unauthenticated } from '@halo/kit/errors';
import type { UserDirectory } from './accounts';
import { apiKeyInput, generateApiKey, isApiKeyFormat, type Scope } from './rules';
import { INVALID_API_KEY, sha256Hex } from './tokens';

export interface ApiKeyRecord {
  id: number;
  ownerId: number;
  name: string;
  prefix: string;
  scopes: string[];
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export interface ApiKeyRepo {
  insertApiKey(k: { ownerId: number; name: string; prefix: string; keyHash: string; scopes: readonly Scope[] }): Promise<ApiKeyRecord>;
  apiKeysOf(ownerId: number): Promise<ApiKeyRecord[]>;
  revokeApiKey(id: number, ownerId: number): Promise<boolean>;
  activeApiKeyByHash(keyHash: string): Promise<ApiKeyRecord | null>;
  touchApiKey(id: number): Promise<void>;
}

/** Signs an access token for `ttlSeconds` (the wiring binds the secret). */
export type TokenSigner = (claims: { sub: string; name: string; role: Role; scope?: string; akid?: string }, ttlSeconds: number) => string;

/** `last_used_at` is a hint for people, not an audit log: at most one write per key per minute. */
export const LAST_USED_RESOLUTION_MS = 60_000;

/** The API-key use cases: managed by admins with their own tokens, exchanged by the gateway. */
export class ApiKeys {
  constructor(private readonly deps: { repo: ApiKeyRepo; users: UserDirectory; sign: TokenSigner; tokenTtlSeconds: number }) {}

  /** 401 anonymous; 403 for a non-admin, and for any API-key token (a key never mints keys). */
  manager(caller: Caller | null): Caller {
    const c = requireAdmin(caller);
    if (c.apiKeyId !== null || c.scopes !== null) throw forbidden();
    return c;
  }

  /** Creates a key; the returned `key` is the only time anyone sees it (only its hash is stored). */
  async create(caller: Caller | null, body: unknown): Promise<{ record: ApiKeyRecord; key: string }> {
    const owner = this.manager(caller);
    const { name, scopes } = apiKeyInput(body);
    const { key, prefix } = generateApiKey();
    const record = await this.deps.repo.insertApiKey({ ownerId: owner.id, name, prefix, keyHash: sha256Hex(key), scopes });
    return { record, key };
  }

  list(caller: Caller | null): Promise<ApiKeyRecord[]> {
    return this.deps.repo.apiKeysOf(this.manager(caller).id);
  }

  /** Revokes one of the caller's keys; someone else's key is as unknown as a missing one (404). */
  async revoke(caller: Caller | null, id: number): Promise<void> {
    const owner = this.manager(caller);
    if (!(await this.deps.repo.revokeApiKey(id, owner.id))) throw notFound();
  }

  /**
   * A key → a short-lived access token for its owner, restricted to the key's scopes. Unknown,
   * malformed and revoked keys, and keys whose owner is gone, are all `Invalid API key`.
   */
  async exchange(apiKey: string, now = Date.now()): Promise<{ accessToken: string; expiresIn: number }> {
    if (!isApiKeyFormat(apiKey)) throw unauthenticated(INVALID_API_KEY);
    const record = await this.deps.repo.activeApiKeyByHash(sha256Hex(apiKey));
    if (!record) throw unauthenticated(INVALID_API_KEY);
    let owner;
    try {
      owner = await this.deps.users.byId(record.ownerId);
    } catch (err) {
      if (isHaloError(err) && err.kind === 'NOT_FOUND') throw unauthenticated(INVALID_API_KEY);
      throw err;
    }
    if (record.lastUsedAt === null || now - Date.parse(record.lastUsedAt) >= LAST_USED_RESOLUTION_MS) {
      await this.deps.repo.touchApiKey(record.id);
    }
    const ttl = this.deps.tokenTtlSeconds;
    const accessToken = this.deps.sign(
      { sub: String(owner.id), name: owner.name, role: owner.role, scope: record.scopes.join(' '), akid: String(record.id) },
      ttl,
    );
    return { accessToken, expiresIn: ttl };
  }
}
