import type { IncomingMessage } from 'node:http';
import { badRequest } from '@halo/kit/errors';
import { route } from '@halo/kit/http';
import { quietAccessLog } from '@halo/kit/logging';
import type { Request, Router } from 'express';
import type { ClientsAnswer, ClientVersionAnswer, PushAnswer, RetireAnswer } from '@halo/contracts/wire';
import { z } from 'zod';
import { authorizeOperationsWriter } from '../domain/access';
import type { ClientOperations } from '../domain/client-operations';
import type { Principal } from '../domain/model';
import { send } from './send';

/** A client's name as gateways record it (docs/registry.md, "Gateway"): `web`, `@halo/client`. */
export const CLIENT = /^[A-Za-z0-9._@/-]{1,64}$/;
/** A client version as gateways record it: semver, build metadata included. */
export const VERSION = /^[A-Za-z0-9._+-]{1,64}$/;
/** An operation's id in its client's manifest (a persisted-query hash, or the client's own key). */
const OPERATION_ID = /^[A-Za-z0-9._:-]{1,128}$/;

const clientVersion = { client: z.string().regex(CLIENT), version: z.string().regex(VERSION) };
const pushBody = z.strictObject({
  ...clientVersion,
  operations: z
    .array(z.strictObject({ id: z.string().regex(OPERATION_ID), body: z.string().max(100_000), name: z.string().max(200).optional() }))
    .min(1)
    .max(5_000),
});
const retireBody = z.strictObject(clientVersion);

/**
 * If-None-Match names `etag` (RFC 9110's weak comparison, as for any If-None-Match): `*`, or a
 * listed tag equal to it with or without `W/`.
 */
function namesEtag(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  return ifNoneMatch.trim() === '*' || ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

/** The request body as `schema` reads it, else 400 naming the first field it refuses (as `POST /v1/usage`). */
function parsed<T>(schema: z.ZodType<T>, body: unknown): T {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  throw badRequest(`${issue.path.map(String).join('.') || 'body'} is invalid`);
}

/**
 * Client operation lists (docs/registry.md, "Client operation lists"): push a client version's
 * operations, read them back, retire a version; gateways poll the active ones. Thin: every rule
 * is in the domain (domain/client-operations.ts). Who may write is answered before the body is
 * read, as far as the principal alone decides it (401 without credentials, 403 for a service or a
 * key without an operations scope), so such a caller learns nothing from a 400.
 */
export function operationRoutes(
  router: Router,
  operations: ClientOperations,
  who: (req: IncomingMessage) => Promise<Principal>,
  reader: (req: Request) => Promise<void>,
): void {
  const writer = async (req: Request) => {
    const principal = await who(req);
    authorizeOperationsWriter(principal);
    return principal;
  };
  route(router, '/v1/operations', {
    get: async (req, res) => {
      await reader(req);
      const client = req.query.client;
      if (client !== undefined && (typeof client !== 'string' || !CLIENT.test(client))) throw badRequest('client is invalid');
      send(res, 200, { clients: await operations.list(client) } satisfies ClientsAnswer);
    },
    post: async (req, res) => {
      const principal = await writer(req);
      const outcome = await operations.push(principal, parsed(pushBody, req.body));
      const { client, version, operations: n, added, removed } = outcome;
      if (outcome.unchanged) send(res, 200, { client, version, operations: n, added, removed, unchanged: true } satisfies PushAnswer);
      else send(res, 201, { client, version, operations: n, added, removed } satisfies PushAnswer);
    },
  });
  // Before `/v1/operations/:client/:version` (a client named `active` is read there, with its version).
  route(router, '/v1/operations/active', {
    get: async (req, res) => {
      await reader(req);
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
  });
  route(router, '/v1/operations/retire', {
    post: async (req, res) => {
      const principal = await writer(req);
      const { client, version } = parsed(retireBody, req.body);
      send(res, 200, (await operations.retire(principal, client, version)) satisfies RetireAnswer);
    },
  });
  // A client's name may hold `/` and `@`: sent percent-encoded (`%40halo%2Fclient`), it is one segment.
  route(router, '/v1/operations/:client/:version', {
    get: async (req, res) => {
      await reader(req);
      send(res, 200, (await operations.get(String(req.params.client), String(req.params.version))) satisfies ClientVersionAnswer);
    },
  });
}
