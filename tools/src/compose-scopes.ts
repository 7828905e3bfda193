import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { declaredFieldAccess, SCOPES } from '@halo/kit/auth';
import { SERVICE_NAMES, type ServiceName } from '@halo/kit/config';
import type { RestManifest } from '@halo/kit/rest';
import { parse } from 'graphql';

/**
 * The API-key half of `npm run compose`: what each authenticated operation declares (a REST
 * manifest's `scope`, a subgraph field's `@requiresScopes`) becomes the page docs/api/scopes.md and
 * the SDK's scope list (packages/client/src/scopes.ts), both committed and drift-checked, so
 * neither can disagree with what the kit enforces.
 */
const ROOT = resolve(__dirname, '../..');
export const SCOPES_DOC_FILE = resolve(ROOT, 'docs/api/scopes.md');
export const CLIENT_SCOPES_FILE = resolve(ROOT, 'packages/client/src/scopes.ts');

/** One authenticated operation: `GET /profile` or `Query.me`, the service, and the scope a key needs (null: no key may). */
export interface DeclaredOperation {
  kind: 'REST' | 'GraphQL';
  operation: string;
  service: ServiceName;
  scope: string | null;
}

/** Every service's subgraph SDL (services/<svc>/schema.graphql). */
export function loadSubgraphSdls(): Partial<Record<ServiceName, string>> {
  const out: Partial<Record<ServiceName, string>> = {};
  for (const name of SERVICE_NAMES) {
    const file = resolve(ROOT, 'services', name, 'schema.graphql');
    if (existsSync(file)) out[name] = readFileSync(file, 'utf8');
  }
  return out;
}

/** The authenticated operations, REST then GraphQL, each in declaration order per service. */
export function declaredOperations(manifests: readonly RestManifest[], sdls: Partial<Record<ServiceName, string>>): DeclaredOperation[] {
  const rest = manifests.flatMap((m) =>
    m.routes
      .filter((r) => r.auth)
      .map((r): DeclaredOperation => ({ kind: 'REST', operation: `${r.method} ${r.path}`, service: m.service, scope: r.scope ?? null })),
  );
  const graphql = (Object.entries(sdls) as [ServiceName, string][]).flatMap(([service, sdl]) =>
    [...declaredFieldAccess(parse(sdl))].map(([coordinate, access]): DeclaredOperation => {
      // One scope per operation is Halo's rule; a set of several would need all of them.
      const scope = access.scopes.length > 0 ? access.scopes.map((set) => set.join(' + ')).join(' or ') : null;
      return { kind: 'GraphQL', operation: coordinate, service, scope };
    }),
  );
  return [...rest, ...graphql];
}

const cell = (ops: DeclaredOperation[]) => ops.map((o) => `\`${o.operation}\``).join(', ') || '—';

export function scopesDoc(ops: readonly DeclaredOperation[]): string {
  const rows = SCOPES.map((scope) => {
    const mine = ops.filter((o) => o.scope === scope);
    return `| \`${scope}\` | ${cell(mine.filter((o) => o.kind === 'REST'))} | ${cell(mine.filter((o) => o.kind === 'GraphQL'))} |`;
  });
  const none = ops.filter((o) => o.scope === null);
  return `<!-- Composed by \`npm run compose\` from services/*/src/rest/manifest.ts (\`scope\`) and services/*/schema.graphql (\`@requiresScopes\`). Do not edit by hand. -->
# API-key scopes

An API key (\`X-API-Key\`, [auth.md](auth.md#api-keys)) acts as its owner — the owner's role —
within its scopes. Every authenticated operation declares the one scope a key needs, next to the
operation itself; the kit enforces it in the service that answers, on every path. A key without it
gets 403 \`{"error":"Forbidden"}\` over REST and \`FORBIDDEN\` in GraphQL (HTTP 200, the field null).
A user's own token is not limited by scopes. Public operations stay public for everyone.

| scope | REST routes | GraphQL fields |
|---|---|---|
${rows.join('\n')}

\`users:email:read\` guards no operation: it lets an admin's key read other users' \`User.email\`,
wherever the field appears. Without it a key reads \`""\` for others, as a stranger does; its
owner's own address needs \`profile:read\`.

\`schema:write\` guards no public operation either: an admin's key with it may check, publish and
roll back service contracts at the schema registry (\`npm run subgraph\`,
[docs/registry.md](../registry.md)), which is internal and never behind the gateway.
\`schema:write:<service>\` (\`schema:write:catalog\`, …) allows the same for that one service only:
the key a service team's CI holds. \`schema:read\` lets an admin's key read the registry (its
history, recorded checks and usage) and its Studio, and write nothing; either write scope implies it.

Authenticated operations that declare no scope refuse every key (403 / \`FORBIDDEN\`): ${cell(none)}.

Keys keep the scopes they were created with; a scope added later (\`chat:read\`, \`chat:write\`,
\`payments:read\`, \`users:email:read\`, \`schema:read\`) is never granted to an existing key: create a new key.
`;
}

export function clientScopes(ops: readonly DeclaredOperation[]): string {
  const entries = ops.filter((o) => o.scope !== null).map((o) => `  ${JSON.stringify(o.operation)}: ${JSON.stringify(o.scope)},`);
  return `// Composed by \`npm run compose\` from the services' declarations (REST \`scope\`, GraphQL \`@requiresScopes\`). Do not edit by hand.

/** Every scope an API key may be granted (\`POST /auth/api-keys\`), besides one client app's \`operations:write:<client>\`. */
export const API_KEY_SCOPES = ${JSON.stringify(SCOPES)} as const;
/** \`operations:write\` for one client app (its name as the registry records it: 1–64 of \`A-Z a-z 0-9 . _ @ / -\`). */
export type ClientOperationsScope = \`operations:write:\${string}\`;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number] | ClientOperationsScope;

/**
 * The scope an API key needs for each authenticated operation (\`METHOD /path\`, \`Type.field\`).
 * An authenticated operation not listed here refuses every key (docs/api/scopes.md).
 */
export const OPERATION_SCOPES: Readonly<Record<string, ApiKeyScope>> = {
${entries.join('\n')}
};
`;
}
