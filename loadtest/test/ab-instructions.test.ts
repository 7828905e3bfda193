import { parseInstructions } from '../src/ab-instructions';

describe('parseInstructions', () => {
  it("adds every thread's instruction count as callgrind_control -e Ir prints them", () => {
    const printed = [
      'PID 15133: node gateway/dist/main.js',
      '',
      '  Totals:         Ir ',
      '   Th 1  135,162,783 ',
      '   Th 3      2,001 ',
      '   Th 12  1,000,000',
      '',
    ].join('\n');
    expect(parseInstructions(printed)).toBe(135_162_783 + 2_001 + 1_000_000);
  });

  it('refuses output without counts (instrumentation off, or no such process)', () => {
    expect(() => parseInstructions('PID 1: node\n  No information available as instrumentation is switched off.\n')).toThrow(
      /no instruction counts/,
    );
  });
});
