import { route } from '@halo/kit/http';
import type { Request, Router } from 'express';
import type { Registry } from '../domain/registry';
import { send } from './send';

/**
 * A query or path parameter as a number for the domain, which validates its range: absent →
 * undefined (the domain's default), anything but digits → NaN (which the domain refuses, 400
 * naming the parameter).
 */
function numberOf(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  return typeof value === 'string' && /^\d{1,16}$/.test(value) ? Number(value) : NaN;
}

/**
 * What the registry's web UI (Studio) and any reader need beside the history: recorded checks,
 * and usage aggregated per coordinate, per hour, per operation and per client
 * (docs/registry.md, "Registry HTTP API"). Thin: every rule is in the domain.
 */
export function insightRoutes(router: Router, registry: Registry, reader: (req: Request) => Promise<void>): void {
  route(router, '/v1/checks', {
    get: async (req, res) => {
      await reader(req);
      const service = req.query.service as string | undefined;
      send(res, 200, { checks: await registry.checks({ service, limit: numberOf(req.query.limit) }) });
    },
  });
  route(router, '/v1/checks/:id', {
    get: async (req, res) => {
      await reader(req);
      send(res, 200, await registry.checkById(numberOf(req.params.id) ?? NaN));
    },
  });
  route(router, '/v1/usage/coordinates', {
    get: async (req, res) => {
      await reader(req);
      send(res, 200, await registry.usageByCoordinate(numberOf(req.query.days)));
    },
  });
  route(router, '/v1/usage/series', {
    get: async (req, res) => {
      await reader(req);
      // Given twice (`?coordinate=a&coordinate=b`) it is a list, which the domain refuses, naming it.
      const q = req.query.coordinate;
      const coordinate = typeof q === 'string' ? q : q === undefined ? '' : JSON.stringify(q);
      send(res, 200, await registry.usageSeries(coordinate, numberOf(req.query.days)));
    },
  });
  route(router, '/v1/usage/operations', {
    get: async (req, res) => {
      await reader(req);
      const { days, limit, by } = req.query;
      send(res, 200, { operations: await registry.topOperations(numberOf(days), numberOf(limit), by) });
    },
  });
  route(router, '/v1/usage/clients', {
    get: async (req, res) => {
      await reader(req);
      send(res, 200, { clients: await registry.usageClients(numberOf(req.query.days)) });
    },
  });
}
