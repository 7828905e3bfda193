import type { GrpcAccess } from '@halo/kit/auth';
import { parseId } from '@halo/kit/domain';
import { unary, type GrpcServiceBinding } from '@halo/kit/grpc';
import type { Logger } from '@halo/kit/logging';
import { catalog as pb } from '@halo/proto';
import type { Catalog } from '../../domain/catalog';
import type { Product } from '../../domain/model';
import { idBatch } from '../../domain/rules';

const toPb = (p: Product): pb.Product => ({
  id: p.id,
  name: p.name,
  description: p.description,
  category: p.category,
  priceCents: p.priceCents,
  createdAt: p.createdAt,
  updatedAt: p.updatedAt,
});

/** Who may call which method (docs/service-identity.md): payments, which checks its orders' products. */
export const PRODUCT_SERVICE_ACCESS = {
  GetProduct: ['payments'],
  GetProducts: ['payments'],
} as const satisfies GrpcAccess;

/** `halo.catalog.v1.ProductService`: product lookups for other services (payments), over the same use cases. */
export function productServiceBinding(catalog: Catalog, logger: Logger): GrpcServiceBinding {
  const implementation: pb.ProductServiceServer = {
    getProduct: unary(logger, async (req: pb.GetProductRequest) => ({ product: toPb(await catalog.getProduct(parseId(req.id))) })),
    getProducts: unary(logger, async (req: pb.GetProductsRequest) => ({
      products: (await catalog.productsByIds(idBatch(req.ids))).map(toPb),
    })),
  };
  return { name: 'halo.catalog.v1.ProductService', definition: pb.ProductServiceService, implementation, access: PRODUCT_SERVICE_ACCESS };
}
