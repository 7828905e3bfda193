import type { IncomingMessage } from 'node:http';
import { GATEWAY_ID_HEADER } from '@halo/kit/contract';
import { badRequest } from '@halo/kit/errors';
import { route } from '@halo/kit/http';
import { quietAccessLog } from '@halo/kit/logging';
import { Router, type Request, type Response } from 'express';
import type {
  CheckAnswer,
  DiffAnswer,
  PublishAnswer,
  RefusedAnswer,
  ServicesAnswer,
  SupergraphAnswer,
  VersionAnswer,
  VersionsAnswer,
} from '@halo/contracts/wire';
import { z } from 'zod';
import type { Principal } from '../domain/model';
import { insightRoutes } from './insight-routes';
import { operationRoutes } from './operation-routes';
import { send } from './send';
import { textDiff } from './text-diff';
import { authorizeReader, authorizeUsageReporter, type PublishOutcome, type Registry } from '../domain/registry';

const usageBody = z.strictObject({
  gateway: z.strictObject({ id: z.string().min(1).max(200), composition: z.number().int().positive().nullable() }),
  reports: z
    .array(
      z
        .strictObject({
          hour: z.iso.datetime({ offset: true }),
          client: z.string().max(64),
          clientVersion: z.string().max(64).optional(),
          operation: z.strictObject({ hash: z.string().min(1).max(128), name: z.string().max(200), body: z.string().max(100_000) }),
          coordinates: z.array(z.string().min(1).max(300)).max(5_000),
          count: z.number().int().min(0).max(1e12),
          // What the gateway's cost analysis estimated, summed over `requests` of the `count` requests.
          cost: z.strictObject({ sum: z.number().min(0).max(1e18), requests: z.number().int().min(0).max(1e12) }).optional(),
        })
        .refine((r) => r.cost === undefined || r.cost.requests <= r.count, { path: ['cost', 'requests'] }),
    )
    .max(10_000),
});

type Resolve = (req: IncomingMessage) => Promise<Principal>;

/** A version number from the path or the query string: 400 names the parameter otherwise. */
function versionParam(name: string, value: unknown): number {
  if (typeof value !== 'string' || !/^[1-9]\d{0,8}$/.test(value)) throw badRequest(`${name} must be a version number`);
  return Number(value);
}

function sendOutcome(res: Response, outcome: PublishOutcome): void {
  if (outcome.kind === 'published')
    send(res, 201, { version: outcome.version, composition: outcome.composition, report: outcome.report } satisfies PublishAnswer);
  else if (outcome.kind === 'unchanged')
    send(res, 200, { unchanged: true, version: outcome.version, composition: outcome.composition } satisfies PublishAnswer);
  else send(res, 422, { error: 'Check failed', report: outcome.report } satisfies RefusedAnswer);
}

/** The registry's HTTP API (docs/registry.md): thin, every rule in the domain. */
export function registryRoutes(registry: Registry, principalOf: Resolve): Router {
  const router = Router();
  const who = (req: Request) => principalOf(req);
  /** Every GET: who may read (authorizeReader), resolved before anything is read. */
  const reader = async (req: Request) => authorizeReader(await who(req));

  route(router, '/v1/supergraph', {
    get: async (req, res) => {
      const principal = await who(req);
      authorizeReader(principal);
      const gatewayId = principal.kind === 'service' && principal.name === 'gateway' ? req.get(GATEWAY_ID_HEADER) : undefined;
      const etag = req.get('if-none-match')?.replace(/^W\//, '').replace(/^"|"$/g, '');
      const latest = await registry.supergraph(etag);
      if (!latest) return send(res, 404, { error: 'Nothing composed yet' });
      await registry.sawGateway(gatewayId, latest.composition);
      if ('notModified' in latest) {
        // Every gateway polls every few seconds: "nothing changed" is a debug line, not an info one.
        quietAccessLog(res);
        return void res
          .status(304)
          .set({ etag: `"${latest.hash}"`, 'cache-control': 'no-store' })
          .end();
      }
      send(
        res,
        200,
        {
          composition: latest.composition,
          hash: latest.hash,
          createdAt: latest.createdAt,
          supergraph: latest.supergraph,
          routes: latest.routes,
          openapi: latest.openapi,
          services: latest.services,
        } satisfies SupergraphAnswer,
        { etag: `"${latest.hash}"` },
      );
    },
  });
  route(router, '/v1/check', {
    post: async (req, res) => {
      const report = await registry.check(await who(req), req.body);
      send(res, 200, { ok: report.ok, report } satisfies CheckAnswer);
    },
  });
  route(router, '/v1/publish', { post: async (req, res) => sendOutcome(res, await registry.publish(await who(req), req.body)) });
  route(router, '/v1/rollback', { post: async (req, res) => sendOutcome(res, await registry.rollback(await who(req), req.body)) });
  historyRoutes(router, registry, reader);
  insightRoutes(router, registry, reader);
  operationRoutes(router, registry.operations, principalOf, reader);
  route(router, '/v1/usage', {
    post: async (req, res) => {
      const principal = await who(req);
      authorizeUsageReporter(principal);
      const parsed = usageBody.safeParse(req.body);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        throw badRequest(`${issue.path.map(String).join('.') || 'body'} is invalid`);
      }
      await registry.recordUsage(principal, parsed.data.gateway, parsed.data.reports);
      send(res, 202, { accepted: parsed.data.reports.length });
    },
  });
  route(router, '/v1/gateways', {
    get: async (req, res) => {
      await reader(req);
      send(res, 200, { gateways: await registry.gateways() });
    },
  });
  return router;
}

/** What a team reads back: the services' current versions, a service's history, one version, two compared. */
function historyRoutes(router: Router, registry: Registry, reader: (req: Request) => Promise<void>): void {
  route(router, '/v1/services', {
    get: async (req, res) => {
      await reader(req);
      send(res, 200, { services: await registry.services() } satisfies ServicesAnswer);
    },
  });
  route(router, '/v1/services/:service/versions', {
    get: async (req, res) => {
      await reader(req);
      send(res, 200, { versions: await registry.versions(String(req.params.service)) } satisfies VersionsAnswer);
    },
  });
  route(router, '/v1/services/:service/versions/:version', {
    get: async (req, res) => {
      await reader(req);
      const v = await registry.version(String(req.params.service), versionParam('version', req.params.version));
      send(res, 200, {
        service: v.service,
        version: v.version,
        hash: v.hash,
        url: v.url,
        author: v.author,
        createdAt: v.createdAt,
        rollbackOf: v.rollbackOf ?? null,
        contract: v.contract,
      } satisfies VersionAnswer);
    },
  });
  route(router, '/v1/services/:service/diff', {
    get: async (req, res) => {
      await reader(req);
      const from = versionParam('from', req.query.from);
      const to = versionParam('to', req.query.to);
      const { versions, ...diff } = await registry.diff(String(req.params.service), from, to);
      send(res, 200, { ...diff, text: textDiff(...versions) } satisfies DiffAnswer);
    },
  });
}
