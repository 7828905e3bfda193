import DataLoader from 'dataloader';
import type { Catalog } from '../domain/catalog';
import type { Product } from '../domain/model';

/**
 * Per-request batching over the domain's batch method: every `product(id)` and entity reference
 * (`Product` from another subgraph, e.g. payments' orders) in one GraphQL request becomes one SQL
 * statement.
 */
export function createLoaders(catalog: Catalog) {
  const productById = new DataLoader<number, Product | null>((ids) => catalog.lookUpProducts(ids));
  return {
    productById,
    /** Rows already loaded by a list query need no second trip when referenced again. */
    primeProducts(products: Product[]) {
      for (const p of products) productById.prime(p.id, p);
    },
  };
}

export type Loaders = ReturnType<typeof createLoaders>;
