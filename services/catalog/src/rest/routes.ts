import { Router, type Request } from 'express';
import { callerFromHeader, route } from '@halo/kit';
import type { Catalog } from '../domain/catalog';
import type { MoneyField, Product } from '../domain/model';
import { centsToPrice } from '../domain/rules';

/** REST v1 (the unversioned routes): snake_case, integer ids, `price` as a number with ≤ 2 decimals. */
export const productJsonV1 = (p: Product) => ({
  id: p.id,
  name: p.name,
  description: p.description,
  category: p.category,
  price: centsToPrice(p.priceCents),
  created_at: p.createdAt,
  updated_at: p.updatedAt,
});

/**
 * REST v2 (`/api/v2/products` at the gateway, `/v2/products` here): the one breaking change is
 * money as integer minor units, `price_cents`, instead of a decimal `price` that every JSON
 * client parses into a binary float (docs/migrations/v1-to-v2.md).
 */
export const productJsonV2 = (p: Product) => ({
  id: p.id,
  name: p.name,
  description: p.description,
  category: p.category,
  price_cents: p.priceCents,
  created_at: p.createdAt,
  updated_at: p.updatedAt,
});

interface Representation {
  prefix: string;
  json: (p: Product) => Record<string, unknown>;
  money: MoneyField;
}

const VERSIONS: Representation[] = [
  { prefix: '', json: productJsonV1, money: 'price' },
  { prefix: '/v2', json: productJsonV2, money: 'price_cents' },
];

export function restRoutes(catalog: Catalog, jwtSecret: string | undefined): Router {
  const router = Router();
  // Reads are public and never look at credentials; writes verify the token here again (the
  // gateway already did) and the domain decides admin/scope.
  const caller = (req: Request) => callerFromHeader(req.headers.authorization, jwtSecret);

  // Same routes, same use cases, two representations.
  for (const { prefix, json, money } of VERSIONS) {
    route(router, `${prefix}/products`, {
      get: async (req, res) => {
        const { page, limit, category, sort, order } = req.query;
        const result = await catalog.listProducts({ page, limit, category, sort, order });
        res.json({ data: result.data.map(json), meta: result.meta });
      },
      post: async (req, res) => {
        const product = await catalog.createProduct(caller(req), req.body, money);
        res.status(201).json({ data: json(product) });
      },
    });
    route(router, `${prefix}/products/:id`, {
      get: async (req, res) => {
        res.json({ data: json(await catalog.getProduct(req.params.id)) });
      },
      put: async (req, res) => {
        const product = await catalog.updateProduct(caller(req), req.params.id, req.body, money);
        res.json({ data: json(product) });
      },
      delete: async (req, res) => {
        await catalog.deleteProduct(caller(req), req.params.id);
        res.status(204).end();
      },
    });
  }
  return router;
}
