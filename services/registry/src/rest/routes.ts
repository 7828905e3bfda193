import type { IncomingMessage } from 'node:http';
import { GATEWAY_ID_HEADER } from '@halo/kit/contract';
import { quietAccessLog } from '@halo/kit/logging';
import { mountRestRoutes } from '@halo/kit/rest';
import { Router, type Request, type Response } from 'express';
import type {
  CheckAnswer,
  ChecksAnswer,
  DiffAnswer,
  GatewaysAnswer,
  PublishAnswer,
  RefusedAnswer,
  ServicesAnswer,
  SupergraphAnswer,
  UsageAnswer,
  UsageClientsAnswer,
  VersionAnswer,
  VersionsAnswer,
} from '@halo/contracts/wire';
import type { Principal } from '../domain/model';
import {
  authorizeChecker,
  authorizePublisher,
  authorizeReader,
  authorizeUsageReporter,
  type PublishOutcome,
  type Registry,
} from '../domain/registry';
import { serviceNamed } from '../domain/requests';
import { restManifest, type RegistryHandlers } from './manifest';
import { operationHandlers } from './operation-routes';
import { send } from './send';
import { textDiff } from './text-diff';

type Resolve = (req: IncomingMessage) => Promise<Principal>;

/** Who is calling, resolved once per request however many steps ask (an API key is exchanged through auth). */
export function principalOnce(principalOf: Resolve): Resolve {
  const resolved = new WeakMap<IncomingMessage, Promise<Principal>>();
  return (req) => {
    let principal = resolved.get(req);
    if (!principal) resolved.set(req, (principal = principalOf(req)));
    return principal;
  };
}

function sendOutcome(res: Response, outcome: PublishOutcome): void {
  if (outcome.kind === 'published')
    send(res, 201, { version: outcome.version, composition: outcome.composition, report: outcome.report } satisfies PublishAnswer);
  else if (outcome.kind === 'unchanged')
    send(res, 200, { unchanged: true, version: outcome.version, composition: outcome.composition } satisfies PublishAnswer);
  else send(res, 422, { error: 'Check failed', report: outcome.report } satisfies RefusedAnswer);
}

/**
 * The registry's HTTP API (docs/registry.md), declared in ./manifest.ts: thin, every rule in the
 * domain. Each route's `authorize` step answers who may call it (401, 403) before its input is
 * read, as far as the caller and the service or client the body names decide it, so a caller
 * that may not do something learns nothing from a 400.
 */
export function registryRoutes(registry: Registry, principalOf: Resolve): Router {
  const who = principalOnce(principalOf);
  /** Every GET: who may read (authorizeReader), resolved before anything is read. */
  const reader = async (req: Request) => authorizeReader(await who(req));
  const handlers: RegistryHandlers = {
    getSupergraph: {
      authorize: reader,
      handle: async (req, res) => {
        const principal = await who(req);
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
    },
    checkContract: {
      authorize: async (req) => authorizeChecker(await who(req), serviceNamed(req.body, 'contract.service')),
      handle: async (req, res, { body }) => {
        const report = await registry.check(await who(req), body);
        send(res, 200, { ok: report.ok, report } satisfies CheckAnswer);
      },
    },
    publishContract: {
      authorize: async (req) => authorizePublisher(await who(req), serviceNamed(req.body, 'contract.service')),
      handle: async (req, res, { body }) => sendOutcome(res, await registry.publish(await who(req), body)),
    },
    rollBack: {
      authorize: async (req) => authorizePublisher(await who(req), serviceNamed(req.body, 'service')),
      handle: async (req, res, { body }) => sendOutcome(res, await registry.rollback(await who(req), body)),
    },
    reportUsage: {
      authorize: async (req) => authorizeUsageReporter(await who(req)),
      handle: async (req, res, { body }) => {
        await registry.recordUsage(await who(req), body.gateway, body.reports);
        send(res, 202, { accepted: body.reports.length } satisfies UsageAnswer);
      },
    },
    listGateways: {
      authorize: reader,
      handle: async (_req, res) => send(res, 200, { gateways: await registry.gateways() } satisfies GatewaysAnswer),
    },
    ...historyHandlers(registry, reader),
    ...insightHandlers(registry, reader),
    ...operationHandlers(registry.operations, who, reader),
  };
  return mountRestRoutes(Router(), restManifest, handlers, { jwtSecret: undefined });
}

/** What a team reads back: the services' current versions, a service's history, one version, two compared. */
function historyHandlers(registry: Registry, reader: (req: Request) => Promise<void>): RegistryHandlers {
  return {
    listServices: {
      authorize: reader,
      handle: async (_req, res) => send(res, 200, { services: await registry.services() } satisfies ServicesAnswer),
    },
    listVersions: {
      authorize: reader,
      handle: async (_req, res, { params }) =>
        send(res, 200, { versions: await registry.versions(params.service) } satisfies VersionsAnswer),
    },
    getVersion: {
      authorize: reader,
      handle: async (_req, res, { params }) => {
        const v = await registry.version(params.service, params.version);
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
    },
    diffVersions: {
      authorize: reader,
      handle: async (_req, res, { params, query }) => {
        const { versions, ...diff } = await registry.diff(params.service, query.from, query.to);
        send(res, 200, { ...diff, text: textDiff(...versions) } satisfies DiffAnswer);
      },
    },
  };
}

/**
 * What the registry's web UI (Studio) and any reader need beside the history: recorded checks,
 * and usage aggregated per coordinate, per hour, per operation and per client
 * (docs/registry.md, "Registry HTTP API"). Ranges that are configuration (`days`) are the domain's
 * to check.
 */
function insightHandlers(registry: Registry, reader: (req: Request) => Promise<void>): RegistryHandlers {
  return {
    listChecks: {
      authorize: reader,
      handle: async (_req, res, { query }) =>
        send(res, 200, { checks: await registry.checks({ service: query.service, limit: query.limit }) } satisfies ChecksAnswer),
    },
    getCheck: {
      authorize: reader,
      handle: async (_req, res, { params }) => send(res, 200, await registry.checkById(params.id)),
    },
    usageByCoordinate: {
      authorize: reader,
      handle: async (_req, res, { query }) => send(res, 200, await registry.usageByCoordinate(query.days)),
    },
    usageSeries: {
      authorize: reader,
      handle: async (_req, res, { query }) => send(res, 200, await registry.usageSeries(query.coordinate ?? '', query.days)),
    },
    topOperations: {
      authorize: reader,
      handle: async (_req, res, { query }) =>
        send(res, 200, { operations: await registry.topOperations(query.days, query.limit, query.by) }),
    },
    usageClients: {
      authorize: reader,
      handle: async (_req, res, { query }) =>
        send(res, 200, { clients: await registry.usageClients(query.days) } satisfies UsageClientsAnswer),
    },
  };
}
