import { isHaloError } from '@halo/kit/errors';
import { callUnary, type PeerChannel } from '@halo/kit/grpc';
import { catalog as pb } from '@halo/proto';
import type { ProductDirectory } from '../../domain/payments';

/**
 * catalog's ProductService as payments' product directory, over the kit's channel to catalog
 * (`peers` in service.ts): every call has a deadline (GRPC_DEADLINE_MS) and payments' service
 * token (catalog lists payments as the caller of GetProduct); the request id travels as metadata.
 * catalog down or slow → the kit's 503; the lookup is a read, so an unreachable catalog is retried
 * within the deadline, and catalog's circuit breaker makes payments fail fast while it is down
 * (the channel's policy, kit grpc/call-policy.ts).
 */
export function catalogProducts(channel: PeerChannel): ProductDirectory & { close(): void } {
  const client = channel.client(pb.ProductServiceClient);
  const opts = channel.read;
  /* eslint-disable @typescript-eslint/unbound-method -- callUnary calls `client.method` on `client`
     (method.call) and reads its gRPC path for metrics: it is meant to go unbound. */
  return {
    async exists(productId) {
      try {
        return (await callUnary(client, client.getProduct, { id: productId }, opts)).product !== undefined;
      } catch (err) {
        if (isHaloError(err) && err.kind === 'NOT_FOUND') return false;
        throw err;
      }
    },
    close: () => client.close(),
  };
  /* eslint-enable @typescript-eslint/unbound-method */
}
