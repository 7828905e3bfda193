import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { lineChartSpec, type LineChart } from '../src/plot';

const chart: LineChart = {
  title: 'p99 against offered load',
  subtitle: 'open model',
  x: { title: 'offered req/s' },
  y: { title: 'p99 ms', scale: 'log' },
  series: [
    {
      name: 'Halo',
      points: [
        { x: 100, y: 5 },
        { x: 200, y: 9 },
        { x: 300, y: Number.NaN },
      ],
    },
    {
      name: 'plain Apollo',
      points: [
        { x: 100, y: 8 },
        { x: 200, y: 900 },
      ],
    },
  ],
  rules: [{ y: 100, label: 'goal 100 ms' }],
};

describe('bench plots (src/plot.ts)', () => {
  it('draws every finite point of every series, in the order given, with the axes and rules asked for', () => {
    const spec = lineChartSpec(chart) as {
      layer: {
        data: { values: Record<string, unknown>[] };
        encoding?: Record<string, { title?: string; scale?: unknown; sort?: unknown }>;
      }[];
    };
    const [lines, rule] = spec.layer;
    expect(lines!.data.values).toEqual([
      { x: 100, y: 5, series: 'Halo' },
      { x: 200, y: 9, series: 'Halo' },
      { x: 100, y: 8, series: 'plain Apollo' },
      { x: 200, y: 900, series: 'plain Apollo' },
    ]);
    expect(lines!.encoding!.y).toMatchObject({ title: 'p99 ms', scale: { type: 'log' } });
    expect(lines!.encoding!.x).toMatchObject({ title: 'offered req/s', scale: { zero: true } });
    expect(lines!.encoding!.color!.sort).toEqual(['Halo', 'plain Apollo']);
    expect(rule!.data.values).toEqual([{ y: 100, label: 'goal 100 ms' }]);
  });

  // Vega and Vega-Lite are ES modules with top-level await, which Jest's CommonJS transform cannot
  // load: the rendering is checked on the built module (`npm test` builds first).
  const built = resolve(__dirname, '../dist/plot.js');
  (existsSync(built) ? it : it.skip)('renders an SVG document with the title, the axis titles and a legend entry per series', () => {
    const svg = execFileSync(
      process.execPath,
      ['-e', `require(${JSON.stringify(built)}).lineChartSvg(${JSON.stringify(chart)}).then((s) => process.stdout.write(s))`],
      { encoding: 'utf8', timeout: 60_000 },
    );
    expect(svg.startsWith('<svg')).toBe(true);
    for (const text of ['p99 against offered load', 'open model', 'offered req/s', 'p99 ms', 'Halo', 'plain Apollo', 'goal 100 ms'])
      expect(svg).toContain(`>${text}<`);
  });
});
