import { forbidden, unauthenticated } from '@halo/kit/errors';
import type { Principal, RegistryStore } from './model';

/** Who an action is recorded as. */
export function authorOf(p: Principal): string {
  switch (p.kind) {
    case 'service':
      return `service:${p.name}`;
    case 'admin':
      return `admin:${p.name} (${p.id})`;
    case 'developer':
      return 'developer (npm start)';
    case 'anonymous':
      // Only a check gets this far without credentials (development, from loopback).
      return 'anonymous (loopback)';
  }
}

/**
 * Check: a service only its own contract; an admin key with `schema:write`, npm start's developer
 * or (in development, from loopback) anyone any; a key with `schema:write:<service>` only those,
 * and a `schema:read` key (`services` empty) none. Without `service` (a body that names none) it
 * answers what the principal alone decides, so a key that may check nothing is 403 whatever it sends.
 */
export function authorizeChecker(p: Principal, service: string | undefined): void {
  if (p.kind === 'service' && service !== undefined && p.name !== service) throw forbidden();
  if (p.kind === 'admin' && p.services !== null && (p.services.length === 0 || (service !== undefined && !p.services.includes(service)))) {
    throw forbidden();
  }
}

/** Publish and roll back: as a check, but never without credentials (development included). */
export function authorizePublisher(p: Principal, service: string | undefined): void {
  if (p.kind === 'anonymous') throw unauthenticated('Token required');
  authorizeChecker(p, service);
}

/**
 * Push and retire a client app's operation list (docs/registry.md, "Client operation lists"): an
 * admin key with `operations:write` (every client: `clients` null) or `operations:write:<client>`
 * (those clients only), and npm start's developer; never a service's token (403: services publish
 * schemas, client teams their operations), never without credentials (401, development included).
 * Without `client` (before the request is read) it answers what the principal alone decides: a
 * key holding no operations scope is 403 whatever it names.
 */
export function authorizeOperationsWriter(p: Principal, client?: string): void {
  if (p.kind === 'anonymous') throw unauthenticated('Token required');
  if (p.kind === 'service') throw forbidden();
  if (p.kind === 'admin' && p.clients !== null && (p.clients.length === 0 || (client !== undefined && !p.clients.includes(client)))) {
    throw forbidden();
  }
}

/** A signed token (a service's, npm start's developer's) is good for one write: sent again (a retry, a copy), it is refused. */
export async function spendWriteToken(store: RegistryStore, p: Principal): Promise<void> {
  if (p.kind !== 'service' && p.kind !== 'developer') return;
  const { jti, exp } = p.token;
  if (!(await store.spendToken(jti, new Date(exp * 1000)))) throw unauthenticated('Invalid token');
}

/** Usage reports, which decide what a check blocks: the gateway only. */
export function authorizeUsageReporter(p: Principal): void {
  if (p.kind === 'anonymous') throw unauthenticated('Token required');
  if (!(p.kind === 'service' && p.name === 'gateway')) throw forbidden();
}

/**
 * Reads (every GET of the API, and the Studio): any principal there is. A service's token reads
 * (the gateway its supergraph); an admin's key holds `schema:read` or a write scope (`schema:write…`
 * or `operations:write…`), which implies reading (the resolver refuses a key with none, 403,
 * before any route); npm start's developer
 * and, in development, a loopback caller without credentials read as before. A new kind of
 * principal has to be placed here before it compiles.
 */
export function authorizeReader(p: Principal): void {
  switch (p.kind) {
    case 'service':
    case 'admin':
    case 'developer':
    case 'anonymous':
      return;
    default:
      p satisfies never;
      throw forbidden();
  }
}
