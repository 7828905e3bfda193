import { validateRestInput, type RestRoute } from '@halo/kit/rest';
import { labelled, messageOf } from '@halo/kit/testing';
import { orderInput, paymentInput } from '../src/domain/rules';
import { restManifest } from '../src/rest/manifest';

/**
 * The manifest's schemas validate REST bodies before the domain sees them, so for every input
 * they must answer exactly what the domain would: the same 400 message, or none.
 */

const route = (id: string) => restManifest.routes.find((r) => r.id === id)! as RestRoute;

const PAYMENT_BODIES = [
  undefined,
  null,
  'text',
  42,
  [],
  {},
  { amount: 10 },
  { amount: 19.99 },
  { amount: 19.999 },
  { amount: 0 },
  { amount: -1 },
  { amount: '10' },
  { amount: null },
  { amount: true },
  { amount: 9_999_999_999.99 },
  { amount: 10_000_000_000 },
  { amount: 0.1 + 0.2 },
  { amount: 5, note: 'extra members are fine' },
];

const ORDER_BODIES = [
  undefined,
  null,
  [],
  {},
  { product_id: 1 },
  { client_order_id: 'a' },
  { product_id: 1, client_order_id: 'a' },
  { product_id: '1', client_order_id: 'a' },
  { product_id: 0, client_order_id: 'a' },
  { product_id: -1, client_order_id: 'a' },
  { product_id: 1.5, client_order_id: 'a' },
  { product_id: 'x', client_order_id: '' },
  { product_id: 1, client_order_id: '  ' },
  { product_id: 1, client_order_id: 'x'.repeat(100) },
  { product_id: 1, client_order_id: 'x'.repeat(101) },
  { product_id: 1, client_order_id: 7 },
  { product_id: null, client_order_id: null },
];

it.each(labelled(PAYMENT_BODIES))('POST /api/payments %s', (_label, body) => {
  expect(messageOf(() => validateRestInput(route('createPayment'), 1, { body }))).toBe(messageOf(() => paymentInput(body)));
});

it.each(labelled(ORDER_BODIES))('POST /api/orders %s', (_label, body) => {
  expect(messageOf(() => validateRestInput(route('createOrder'), 1, { body }))).toBe(messageOf(() => orderInput(body)));
});

it('every route needs a caller, and ids in paths are checked the kit’s way', () => {
  expect(restManifest.routes.every((r) => r.auth === 'required')).toBe(true);
  expect(messageOf(() => validateRestInput(route('getOrder'), 1, { params: { id: 'x' } }))).toBe('Invalid id');
  expect(messageOf(() => validateRestInput(route('getPayment'), 1, { params: { id: '12' } }))).toBeNull();
});
