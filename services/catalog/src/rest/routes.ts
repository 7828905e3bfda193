import { Router } from 'express';
import { mountRestRoutes, type RestCaller } from '@halo/kit/rest';
import type { Catalog } from '../domain/catalog';
import type { MoneyField, Product } from '../domain/model';
import { centsToPrice } from '../domain/rules';
import { restManifest } from './manifest';

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
  json: (p: Product) => Record<string, unknown>;
  money: MoneyField;
  /**
   * The product's URL path as clients address this version (the `Location` of a created one): v1
   * is the unversioned path, v2 the gateway's `/api/v2/…`, which it serves here as `/v2/…`.
   */
  path: (p: Product) => string;
}

/** Same routes, same use cases, one representation per API version (src/rest/manifest.ts). */
const VERSIONS: Record<number, Representation> = {
  1: { json: productJsonV1, money: 'price', path: (p) => `/products/${p.id}` },
  2: { json: productJsonV2, money: 'price_cents', path: (p) => `/api/v2/products/${p.id}` },
};

/**
 * Products are public and the same for everyone: a shared cache (CDN) may keep a successful read
 * for 60 s, as the GraphQL fields' `@cacheControl(maxAge: 60)` say (docs/api/conventions.md). The
 * gateway turns this into no-store for a caller with credentials and for every error.
 */
export const PUBLIC_READ = 'public, max-age=60';

export function restRoutes(catalog: Catalog, jwtSecret: string | undefined): Router {
  // Reads are public and never look at credentials; writes verify the token here again (the
  // gateway already did; once per request, by the kit) and the domain decides admin/scope.
  // Who comes before what (the domain's order of checks): a caller who may not write gets 403
  // whatever the body or id says. The domain checks again, for every other transport.
  const writer = { authorize: (_req: unknown, { caller }: RestCaller) => catalog.writer(caller()) };
  const rep = (version: number) => VERSIONS[version]!;

  return mountRestRoutes(
    Router(),
    restManifest,
    {
      listProducts: async (_req, res, { version, query }) => {
        const result = await catalog.listProducts(query);
        res.setHeader('Cache-Control', PUBLIC_READ);
        res.json({ data: result.data.map(rep(version).json), meta: result.meta });
      },
      createProduct: {
        ...writer,
        handle: async (_req, res, { version, body, caller }) => {
          const product = await catalog.createProduct(caller(), body, rep(version).money);
          res
            .status(201)
            .location(rep(version).path(product))
            .json({ data: rep(version).json(product) });
        },
      },
      getProduct: async (_req, res, { version, params }) => {
        const product = await catalog.getProduct(params.id);
        res.setHeader('Cache-Control', PUBLIC_READ);
        res.json({ data: rep(version).json(product) });
      },
      updateProduct: {
        ...writer,
        handle: async (_req, res, { version, params, body, caller }) => {
          const product = await catalog.updateProduct(caller(), params.id, body, rep(version).money);
          res.json({ data: rep(version).json(product) });
        },
      },
      deleteProduct: {
        ...writer,
        handle: async (_req, res, { params, caller }) => {
          await catalog.deleteProduct(caller(), params.id);
          res.status(204).end();
        },
      },
    },
    { jwtSecret },
  );
}
