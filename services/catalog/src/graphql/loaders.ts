import DataLoader from 'dataloader';
import type { CatalogRepo } from '../domain/catalog';
import type { Product } from '../domain/model';

/**
 * Per-request batching: every `product(id)` and entity reference (`Product` from another
 * subgraph, e.g. payments' orders) in one GraphQL request becomes one SQL statement.
 */
export function createLoaders(repo: CatalogRepo) {
  const productById = new DataLoader<number, Product | null>(async (ids) => {
    const found = new Map((await repo.byIds(ids)).map((p) => [p.id, p]));
    return ids.map((id) => found.get(id) ?? null);
  });
  return {
    productById,
    /** Rows already loaded by a list query need no second trip when referenced again. */
    primeProducts(products: Product[]) {
      for (const p of products) productById.prime(p.id, p);
    },
  };
}

export type Loaders = ReturnType<typeof createLoaders>;
