import { Kind, parse, print, type OperationDefinitionNode } from 'graphql';
import { planDefer } from '../src/graphql/defer';
import { assemble, deliverIncrementally, type IncrementalPayload } from '../src/graphql/incremental';

/**
 * How an operation with @defer is cut into parts (pure: no gateway, no subgraph). What a client
 * observes through a running gateway is gateway/test/defer.test.ts's; here, the shapes it would
 * take too long to set up there: nested fragments, variables, several fragments at one place.
 */
const plan = (query: string, variables?: Record<string, unknown>) => {
  const document = parse(query);
  const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
  return planDefer(document, operation, variables);
};
const flat = (query: string) => print(parse(query));

describe('planDefer', () => {
  it('cuts a nested deferred fragment into its own part, after its parent, with only the way to it', () => {
    const p = plan(`query Q($id: ID!, $n: Int) {
      product(id: $id) { name ... @defer(label: "outer") { price reviews(first: $n) { body ... @defer(label: "inner") { author { name } } } } }
    }`)!;
    expect(flat(p.primary.query)).toBe(flat('query Q($id: ID!) { product(id: $id) { name } }'));
    expect(p.parts.map((x) => ({ label: x.label, path: x.path, parent: x.parent }))).toEqual([
      { label: 'outer', path: ['product'], parent: null },
      { label: 'inner', path: ['product', 'reviews'], parent: 0 },
    ]);
    expect(flat(p.parts[0]!.query)).toBe(
      flat('query Q($id: ID!, $n: Int) { product(id: $id) { ... { price reviews(first: $n) { body } } } }'),
    );
    expect(flat(p.parts[1]!.query)).toBe(
      flat('query Q($id: ID!, $n: Int) { product(id: $id) { ... { reviews(first: $n) { ... { author { name } } } } } }'),
    );
  });

  it('keeps a placeholder where a selection set would be empty, and honours if: $var', () => {
    const p = plan('query Q($d: Boolean!) { me { ... @defer(if: $d) { name } } }', { d: true })!;
    expect(flat(p.primary.query)).toBe(flat('query Q { me { __halo_deferred: __typename } }'));
    expect(plan('query Q($d: Boolean!) { me { ... @defer(if: $d) { name } } }', { d: false })).toBeNull();
    expect(plan('query Q($d: Boolean = false) { me { ... @defer(if: $d) { name } } }', {})).toBeNull();
  });

  it("plans once per operation and `@defer` argument values, never answering one request with another's plan", () => {
    const document = parse('query Q($d: Boolean = false, $l: String) { me { name ... @defer(if: $d, label: $l) { email } } }');
    const operation = document.definitions[0] as OperationDefinitionNode;
    expect(planDefer(document, operation, {})).toBeNull();
    const on = planDefer(document, operation, { d: true, l: 'a' });
    expect(on?.parts[0]?.label).toBe('a');
    // The same values: the same plan (its documents, analyses and query plans cached once).
    expect(planDefer(document, operation, { d: true, l: 'a' })).toBe(on);
    expect(planDefer(document, operation, { d: true, l: 'b' })?.parts[0]?.label).toBe('b');
    // Not sent (its default false applies) is not the same as sent.
    expect(planDefer(document, operation, {})).toBeNull();
    expect(on!.parts[0]!.queryHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('answers mutations and operations without @defer whole', () => {
    expect(plan('mutation { bump ... @defer { x } }')).toBeNull();
    expect(plan('{ a { b } }')).toBeNull();
  });
});

describe('deliverIncrementally', () => {
  it('sends a nested part only after its parent, even when it is ready first, and assembles the whole', async () => {
    const p = plan('{ product { name ... @defer { price ... @defer { stock } } } }')!;
    let releaseOuter: () => void = () => undefined;
    const outerHeld = new Promise<void>((r) => (releaseOuter = r));
    const answers = new Map<string, () => Promise<unknown>>([
      [p.primary.query, async () => ({ data: { product: { name: 'P' } } })],
      [p.parts[0]!.query, async () => (await outerHeld, { data: { product: { price: 3 } } })],
      [p.parts[1]!.query, async () => ({ data: { product: { stock: 9 } } })],
    ]);
    const payloads: IncrementalPayload[] = [];
    const run = deliverIncrementally(p, (part) => answers.get(part.query)!() as never);
    payloads.push((await run.next()).value as IncrementalPayload);
    // The inner part is ready; the outer is held: nothing may come yet.
    const pending = run.next();
    await new Promise((r) => setTimeout(r, 20));
    releaseOuter();
    payloads.push((await pending).value as IncrementalPayload);
    for (let next = await run.next(); !next.done; next = await run.next()) payloads.push(next.value);
    expect(payloads[1]!.incremental!.map((i) => i.data)).toEqual([{ price: 3 }, { stock: 9 }]);
    expect(payloads.at(-1)!.hasNext).toBe(false);
    expect(assemble(payloads)).toEqual({ data: { product: { name: 'P', price: 3, stock: 9 } } });
  });
});
