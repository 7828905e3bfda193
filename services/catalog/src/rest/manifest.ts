import { z } from '@halo/kit/config';
import { requiredText } from '@halo/kit/domain';
import { defineRestManifest, pathId, ruleField, type RestDeprecation, type RestVersion } from '@halo/kit/rest';
import { ORDERS, SORT_KEYS, type MoneyField } from '../domain/model';
import {
  centsToPrice,
  DEFAULT_LIMIT,
  DEFAULT_PAGE,
  MAX_CATEGORY,
  MAX_DESCRIPTION,
  MAX_LIMIT,
  MAX_NAME,
  MAX_PRICE_CENTS,
  newProductFields,
  productChanges,
} from '../domain/rules';

/**
 * catalog's public REST routes (gateway route table and OpenAPI are composed from this file by
 * `npm run compose`). Every products route exists in two versions: v1 (the unversioned paths,
 * money as a decimal `price`) and v2 (`/api/v2/…`, integer `price_cents`). Field checks call the
 * domain's own rules, so a 400 reads the same here, in GraphQL and in the domain.
 */

/** v1 of the products routes: announced with v2, switched off nine months later. */
export const V1_RETIREMENT: RestDeprecation = { sunset: 'Wed, 01 Sep 2027 00:00:00 GMT', link: '/docs/migrations/v1-to-v2.md' };

const text = (field: string, max: number) =>
  ruleField((v) => requiredText(v, field, max), { type: 'string', minLength: 1, maxLength: max, pattern: '\\S' });

/** Validated by the domain's update rule alone (null is no description). */
const description = ruleField((v) => productChanges({ description: v }), {
  type: ['string', 'null'],
  maxLength: MAX_DESCRIPTION,
  description: 'Trimmed; null or absent is an empty description',
});

const moneyDocs: Record<MoneyField, Record<string, unknown>> = {
  price: { type: 'number', minimum: 0, maximum: centsToPrice(MAX_PRICE_CENTS), description: 'A JSON number with at most 2 decimals' },
  price_cents: { type: 'integer', minimum: 0, maximum: MAX_PRICE_CENTS, description: 'Integer minor units (cents)' },
};

/** The money field of a version: its value checked by the domain's update rule. */
const money = (field: MoneyField) => ruleField((v) => productChanges({ [field]: v }, field), moneyDocs[field]);

/**
 * `POST`'s money field: judged by the domain's create rule with the other members valid, so
 * "absent" (missing, null or '') is `<field> is required` exactly as there.
 */
const requiredMoney = (field: MoneyField) =>
  ruleField((v) => newProductFields({ name: 'n', category: 'c', [field]: v }, field), moneyDocs[field]);

const newProduct = (field: MoneyField) =>
  z.object({
    name: text('name', MAX_NAME),
    description: description.optional(),
    category: text('category', MAX_CATEGORY),
    [field]: requiredMoney(field),
  });

/** A partial update: only the members present are checked; none of them at all is `No fields to update`. */
const productUpdate = (field: MoneyField) =>
  z
    .object({
      name: text('name', MAX_NAME).optional(),
      description: description.optional(),
      category: text('category', MAX_CATEGORY).optional(),
      [field]: money(field).optional(),
    })
    .refine((b) => Object.values(b).some((v) => v !== undefined), 'No fields to update')
    .meta({ minProperties: 1 });

const listQuery = z.object({
  // The domain's order: sort, order, category (page and limit never fail: they fall back).
  sort: z
    .enum([...SORT_KEYS, ''], { error: 'Invalid sort' })
    .optional()
    .meta({ default: 'id' }),
  order: z
    .enum([...ORDERS, ''], { error: 'Invalid order' })
    .optional()
    .meta({ default: 'asc' }),
  category: z.string({ error: 'Invalid category' }).optional().meta({ description: 'Exact match' }),
  page: z
    .unknown()
    .optional()
    .meta({ type: 'integer', minimum: 1, default: DEFAULT_PAGE, description: 'A value that is not a positive integer falls back to 1' }),
  limit: z
    .unknown()
    .optional()
    .meta({
      // No `maximum`: a larger limit is accepted and capped, so a client validating against the
      // schema must not refuse what the server answers (issue 29).
      type: 'integer',
      minimum: 1,
      default: DEFAULT_LIMIT,
      description:
        `Page size. A larger value is accepted and capped at ${MAX_LIMIT} (the answer's \`meta.limit\` says which); ` +
        `a value that is not a positive integer falls back to ${DEFAULT_LIMIT}.`,
    }),
});

const timestamps = { created_at: z.iso.datetime(), updated_at: z.iso.datetime() };
const productV1 = z.object({
  id: z.number().int(),
  name: z.string(),
  description: z.string(),
  category: z.string(),
  price: z.number(),
  ...timestamps,
});
const productV2 = z.object({
  id: z.number().int(),
  name: z.string(),
  description: z.string(),
  category: z.string(),
  price_cents: z.number().int(),
  ...timestamps,
});
const pageMeta = z.object({
  page: z.number().int(),
  limit: z.number().int(),
  total: z.number().int(),
  totalPages: z.number().int(),
  hasNext: z.boolean(),
  hasPrev: z.boolean(),
});
const one = (p: z.ZodType) => z.object({ data: p });
const page = (p: z.ZodType) => z.object({ data: z.array(p), meta: pageMeta });

const FORBIDDEN = { description: '`Forbidden`: an admin token, or an admin API key with scope `catalog:write`, is needed' };
const NOT_FOUND = { description: '`Not found`' };

/** The two versions of a route: v1 deprecated, v2 with its own body and answers. */
const versions = (v2: RestVersion): Record<number, RestVersion> => ({ 1: { deprecated: V1_RETIREMENT }, 2: v2 });

export const restManifest = defineRestManifest({
  service: 'catalog',
  description: 'Products: a paginated, filterable collection with admin writes (v1 and v2)',
  routes: [
    {
      id: 'listProducts',
      method: 'GET',
      path: '/products',
      summary: 'List products',
      description: 'Page-based, filtered by exact category, sorted by `sort` and `order` (default `id` ascending).',
      query: listQuery,
      responses: { 200: { description: 'A page of products', schema: page(productV1) } },
      versions: versions({ responses: { 200: { description: 'A page of products', schema: page(productV2) } } }),
    },
    {
      id: 'createProduct',
      method: 'POST',
      path: '/products',
      summary: 'Create a product',
      auth: 'required',
      scope: 'catalog:write',
      body: newProduct('price'),
      responses: {
        201: { description: 'The new product', schema: one(productV1), location: 'The product: `/products/<id>`' },
        403: FORBIDDEN,
      },
      versions: versions({
        body: newProduct('price_cents'),
        responses: { 201: { description: 'The new product', schema: one(productV2), location: 'The product: `/api/v2/products/<id>`' } },
      }),
    },
    {
      id: 'getProduct',
      method: 'GET',
      path: '/products/:id',
      summary: 'One product',
      params: z.object({ id: pathId() }),
      responses: { 200: { description: 'The product', schema: one(productV1) }, 404: NOT_FOUND },
      versions: versions({ responses: { 200: { description: 'The product', schema: one(productV2) } } }),
    },
    {
      id: 'updateProduct',
      method: 'PUT',
      path: '/products/:id',
      summary: 'Update a product (partial: only the members sent change)',
      auth: 'required',
      scope: 'catalog:write',
      params: z.object({ id: pathId() }),
      body: productUpdate('price'),
      responses: { 200: { description: 'The updated product', schema: one(productV1) }, 403: FORBIDDEN, 404: NOT_FOUND },
      versions: versions({
        body: productUpdate('price_cents'),
        responses: { 200: { description: 'The updated product', schema: one(productV2) } },
      }),
    },
    {
      id: 'deleteProduct',
      method: 'DELETE',
      path: '/products/:id',
      summary: 'Delete a product',
      auth: 'required',
      scope: 'catalog:write',
      params: z.object({ id: pathId() }),
      responses: { 204: { description: 'Deleted' }, 403: FORBIDDEN, 404: NOT_FOUND },
      versions: versions({}),
    },
  ],
});
