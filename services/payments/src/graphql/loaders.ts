import DataLoader from 'dataloader';
import type { Order, Payment } from '../domain/model';
import type { Payments } from '../domain/payments';

/**
 * Per-request batching over the domain's batch methods: every entity reference and nested list
 * of one GraphQL request costs one SQL statement per kind, whatever the number of rows —
 * `me { orders }` for one user or `_entities` for fifty.
 */
export function createLoaders(payments: Payments) {
  return {
    orderById: new DataLoader<number, Order | null>((ids) => payments.lookUpOrders(ids)),
    ordersByUserId: new DataLoader<number, Order[]>((userIds) => payments.ordersOfUsers(userIds)),
    paymentById: new DataLoader<number, Payment | null>((ids) => payments.lookUpPayments(ids)),
  };
}

export type Loaders = ReturnType<typeof createLoaders>;
