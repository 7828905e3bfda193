import { DOCUMENT_BUDGET_BYTES, documentCache } from '../src/graphql/lean';

/**
 * The lean path keeps parsed documents by query text (src/graphql/lean.ts). Query text is chosen by
 * the client: many distinct large queries must cost a bounded amount of memory, not one entry each.
 */
describe('the lean path document cache', () => {
  it('holds at most its memory budget, however many large queries arrive', () => {
    const cache = documentCache<object>();
    // 60 KB of text each (under the per-entry cap): without the budget 1000 of them would be kept.
    for (let i = 0; i < 1000; i++) cache.set(`{ product(id: "${String(i).padEnd(60_000, 'x')}") { id } }`, {});
    expect(cache.calculatedSize).toBeLessThanOrEqual(DOCUMENT_BUDGET_BYTES);
    expect(cache.size).toBeLessThan(40);
    // The most recent stays.
    expect(cache.has(`{ product(id: "${'999'.padEnd(60_000, 'x')}") { id } }`)).toBe(true);
  });

  it('never keeps one query text larger than the per-entry cap', () => {
    const cache = documentCache<object>();
    const huge = `{ product(id: "${'y'.repeat(500_000)}") { id } }`;
    cache.set(huge, {});
    expect(cache.has(huge)).toBe(false);
    expect(cache.calculatedSize).toBe(0);
  });

  it('keeps many ordinary queries, up to its entry cap', () => {
    const cache = documentCache<object>(1000);
    for (let i = 0; i < 1500; i++) cache.set(`{ product(id: "${i}") { id name } }`, {});
    expect(cache.size).toBe(1000);
  });
});
