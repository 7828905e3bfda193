/**
 * Line charts of a bench's results as SVG files (latency against offered load, memory against
 * subscribers), drawn with Vega-Lite and rendered by Vega without a browser or a canvas. Both are
 * ES modules with top-level await, so they are loaded with `import()` (this package is CommonJS).
 */
export interface Series {
  name: string;
  points: { x: number; y: number }[];
}

export interface LineChart {
  title: string;
  /** A second line under the title: what was measured, how. */
  subtitle?: string;
  x: { title: string; scale?: 'linear' | 'log' };
  y: { title: string; scale?: 'linear' | 'log' };
  series: Series[];
  /** Horizontal reference lines (a goal, a limit), labelled. */
  rules?: { y: number; label: string }[];
}

/** The Vega-Lite specification of the chart (exported for its test; no I/O). */
export function lineChartSpec(chart: LineChart): Record<string, unknown> {
  const values = chart.series.flatMap((s) =>
    s.points.filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y)).map((p) => ({ ...p, series: s.name })),
  );
  const scale = (kind?: 'linear' | 'log') => (kind === 'log' ? { type: 'log' } : { zero: true });
  const lines = {
    data: { values },
    mark: { type: 'line', point: true },
    encoding: {
      x: { field: 'x', type: 'quantitative', title: chart.x.title, scale: scale(chart.x.scale) },
      y: { field: 'y', type: 'quantitative', title: chart.y.title, scale: scale(chart.y.scale) },
      color: { field: 'series', type: 'nominal', title: null, sort: chart.series.map((s) => s.name) },
    },
  };
  const rules = (chart.rules ?? []).map((r) => ({
    data: { values: [r] },
    layer: [
      { mark: { type: 'rule', strokeDash: [4, 4], color: '#888' }, encoding: { y: { field: 'y', type: 'quantitative' } } },
      {
        mark: { type: 'text', align: 'left', dx: 4, dy: -6, color: '#555' },
        encoding: { y: { field: 'y', type: 'quantitative' }, x: { value: 0 }, text: { field: 'label' } },
      },
    ],
  }));
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: chart.subtitle ? { text: chart.title, subtitle: chart.subtitle } : chart.title,
    width: 560,
    height: 300,
    background: 'white',
    layer: [lines, ...rules],
  };
}

/** The chart as a standalone SVG document. */
export async function lineChartSvg(chart: LineChart): Promise<string> {
  const [vega, vegaLite] = await Promise.all([import('vega'), import('vega-lite')]);
  const { spec } = vegaLite.compile(lineChartSpec(chart) as unknown as Parameters<typeof vegaLite.compile>[0]);
  const view = new vega.View(vega.parse(spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
