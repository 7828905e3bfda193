import { requireAdmin, type Caller } from '@halo/kit/auth';
import { alignById, keysetConnection, type ConnectionArgs } from '@halo/kit/domain';
import { found, notFound } from '@halo/kit/errors';
import type { ListQuery, MoneyField, Product, ProductFields, ProductPage } from './model';
import { listQuery, newProductFields, offsetOf, pageMeta, PRODUCT_CURSOR, productChanges, type RawListQuery } from './rules';

/** What the domain needs from storage; `CatalogStore` implements it over SQL. */
export interface CatalogRepo {
  /** One page in the query's order, and the number of matching rows (two reads, run together). */
  page(q: ListQuery, offset: number): Promise<Product[]>;
  count(category: string | null): Promise<number>;
  /** Keyset page in id order: up to `limit` products with id > `afterId`. */
  afterId(limit: number, afterId: number | null, category: string | null): Promise<Product[]>;
  byIds(ids: readonly number[]): Promise<Product[]>;
  insert(p: ProductFields): Promise<Product>;
  update(id: number, changes: Partial<ProductFields>): Promise<Product | null>;
  delete(id: number): Promise<boolean>;
}

/**
 * The catalog use cases, once, for every transport: REST (v1 and v2), GraphQL and gRPC call
 * these and only translate the results. Authorisation lives here too, so no adapter can forget it.
 */
export class Catalog {
  constructor(private readonly repo: CatalogRepo) {}

  /** `GET /products`, `products(...)`: raw parameters in, the spec's page + meta out. */
  async listProducts(raw: RawListQuery): Promise<ProductPage> {
    const q = listQuery(raw);
    const [data, total] = await Promise.all([this.repo.page(q, offsetOf(q)), this.repo.count(q.category)]);
    return { data, meta: pageMeta(q, total) };
  }

  /** `productConnection(first, after, category)`: a Relay connection over keyset pagination by id. */
  productConnection(args: ConnectionArgs & { category?: string | null }) {
    return keysetConnection(PRODUCT_CURSOR, args, (limit, after) => this.repo.afterId(limit, after?.id ?? null, args.category || null));
  }

  /** Products by id, null where unknown: one statement for a whole batch (what the DataLoader calls). */
  async lookUpProducts(ids: readonly number[]): Promise<(Product | null)[]> {
    return alignById(ids, await this.repo.byIds(ids));
  }

  /** Ids arrive parsed (REST's manifest, GraphQL's and gRPC's adapters: 400 `Invalid id` there). */
  async getProduct(id: number): Promise<Product> {
    return found((await this.lookUpProducts([id]))[0]);
  }

  /** Products that exist, in the order asked; unknown ids are left out (`idBatch` bounds the batch). */
  async productsByIds(ids: readonly number[]): Promise<Product[]> {
    return (await this.lookUpProducts(ids)).filter((p): p is Product => p !== null);
  }

  /** Who may write products: an admin (401 anonymous, 403 anyone else). Adapters ask it first: who before which. */
  writer(caller: Caller | null): Caller {
    return requireAdmin(caller);
  }

  /** Order of checks: who (401/403), then what (400), then which (404). */
  async createProduct(caller: Caller | null, body: unknown, money: MoneyField = 'price'): Promise<Product> {
    this.writer(caller);
    return this.repo.insert(newProductFields(body, money));
  }

  async updateProduct(caller: Caller | null, id: number, body: unknown, money: MoneyField = 'price'): Promise<Product> {
    this.writer(caller);
    const updated = await this.repo.update(id, productChanges(body, money));
    if (!updated) throw notFound();
    return updated;
  }

  async deleteProduct(caller: Caller | null, id: number): Promise<void> {
    this.writer(caller);
    if (!(await this.repo.delete(id))) throw notFound();
  }
}
