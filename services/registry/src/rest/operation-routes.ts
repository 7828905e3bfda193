import type { IncomingMessage } from 'node:http';
import { quietAccessLog } from '@halo/kit/logging';
import type { Request } from 'express';
import type { ClientsAnswer, ClientVersionAnswer, PushAnswer, RetireAnswer } from '@halo/contracts/wire';
import { authorizeOperationsWriter } from '../domain/access';
import type { ClientOperations } from '../domain/client-operations';
import type { Principal } from '../domain/model';
import type { RegistryHandlers } from './manifest';
import { send } from './send';

/**
 * If-None-Match names `etag` (RFC 9110's weak comparison, as for any If-None-Match): `*`, or a
 * listed tag equal to it with or without `W/`.
 */
function namesEtag(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  return ifNoneMatch.trim() === '*' || ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

/** The client a push or retirement names, read only to decide who may ask. */
const clientNamed = (body: unknown): string | undefined => {
  const client = typeof body === 'object' && body !== null ? (body as { client?: unknown }).client : undefined;
  return typeof client === 'string' ? client : undefined;
};

/**
 * Client operation lists (docs/registry.md, "Client operation lists"): push a client version's
 * operations, read them back, retire a version; gateways poll the active ones. Thin: every rule
 * is in the domain (domain/client-operations.ts). Who may write is answered before the body is
 * read, as far as the principal and the client it names decide it (401 without credentials, 403
 * for a service or a key without an operations scope for that client), so such a caller learns
 * nothing from a 400.
 */
export function operationHandlers(
  operations: ClientOperations,
  who: (req: IncomingMessage) => Promise<Principal>,
  reader: (req: Request) => Promise<void>,
): RegistryHandlers {
  const writer = async (req: Request) => authorizeOperationsWriter(await who(req), clientNamed(req.body));
  return {
    listClientVersions: {
      authorize: reader,
      handle: async (_req, res, { query }) => send(res, 200, { clients: await operations.list(query.client) } satisfies ClientsAnswer),
    },
    pushOperations: {
      authorize: writer,
      handle: async (req, res, { body }) => {
        const outcome = await operations.push(await who(req), body);
        const { client, version, operations: n, added, removed } = outcome;
        if (outcome.unchanged) send(res, 200, { client, version, operations: n, added, removed, unchanged: true } satisfies PushAnswer);
        else send(res, 201, { client, version, operations: n, added, removed } satisfies PushAnswer);
      },
    },
    activeOperations: {
      authorize: reader,
      handle: async (req, res) => {
        const feed = await operations.active();
        const headers = { etag: feed.etag, 'cache-control': 'no-cache' };
        if (namesEtag(req.get('if-none-match'), feed.etag)) {
          // Every gateway polls it: "nothing changed" is a debug line, as for GET /v1/supergraph.
          quietAccessLog(res);
          return void res.status(304).set(headers).end();
        }
        // The very text the ETag hashes.
        res.status(200).set(headers).type('json').send(feed.json);
      },
    },
    retireClientVersion: {
      authorize: writer,
      handle: async (req, res, { body }) =>
        send(res, 200, (await operations.retire(await who(req), body.client, body.version)) satisfies RetireAnswer),
    },
    getClientVersion: {
      authorize: reader,
      handle: async (_req, res, { params }) =>
        send(res, 200, (await operations.get(params.client, params.version)) satisfies ClientVersionAnswer),
    },
  };
}
