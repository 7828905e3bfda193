import { html, num, type Html } from './html';

/**
 * A time series drawn on the server as SVG (no script, nothing to fetch): requests per hour, one
 * line per client. Colours are a fixed palette legible on light and dark backgrounds; the legend
 * names them, and the figure's description says the totals, for a reader who cannot see it.
 */
const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#17becf', '#8c564b', '#e377c2'];
const W = 900;
const H = 240;
const PAD = { left: 48, right: 12, top: 12, bottom: 28 };

export interface Series {
  label: string;
  counts: number[];
}

export function linePlot(opts: { title: string; hours: string[]; series: Series[] }): Html {
  const { hours, title } = opts;
  // The busiest clients drawn, the rest summed: a legend of twenty colours helps nobody.
  const sorted = [...opts.series].sort((a, b) => sum(b.counts) - sum(a.counts));
  const shown = sorted.slice(0, PALETTE.length - 1);
  const rest = sorted.slice(PALETTE.length - 1);
  if (rest.length) shown.push({ label: `${rest.length} more`, counts: hours.map((_, i) => sum(rest.map((s) => s.counts[i] ?? 0))) });
  const max = Math.max(1, ...shown.flatMap((s) => s.counts));
  const x = (i: number) => PAD.left + (hours.length <= 1 ? 0 : (i / (hours.length - 1)) * (W - PAD.left - PAD.right));
  const y = (v: number) => PAD.top + (1 - v / max) * (H - PAD.top - PAD.bottom);
  const lines = shown.map((s, k) => {
    const points = s.counts.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
    return html`<polyline fill="none" stroke="${PALETTE[k]}" stroke-width="1.5" points="${points}" />`;
  });
  // A label a day (or fewer, over a long window), at midnight UTC.
  const step = Math.max(1, Math.ceil(hours.length / 24 / 8));
  const ticks = hours.flatMap((h, i) =>
    h.slice(11, 13) === '00' && Number(h.slice(8, 10)) % step === 0
      ? [html`<text x="${x(i).toFixed(1)}" y="${H - 8}" text-anchor="middle">${h.slice(5, 10)}</text>`]
      : [],
  );
  const total = sum(shown.flatMap((s) => s.counts));
  const id = `plot-${title.replace(/[^A-Za-z0-9]+/g, '-')}`;
  const describe = shown.map((s) => `${s.label}: ${num(sum(s.counts))}`).join('; ');
  return html`<figure>
    <svg viewBox="0 0 ${W} ${H}" width="100%" role="img" aria-labelledby="${id}-t ${id}-d">
      <title id="${id}-t">${title}</title>
      <desc id="${id}-d">Requests per hour over ${hours.length} hours, ${num(total)} in all. ${describe}.</desc>
      <line
        x1="${PAD.left}"
        y1="${H - PAD.bottom}"
        x2="${W - PAD.right}"
        y2="${H - PAD.bottom}"
        stroke="currentColor"
        stroke-opacity=".3"
      />
      <text x="${PAD.left - 6}" y="${PAD.top + 4}" text-anchor="end">${num(max)}</text>
      <text x="${PAD.left - 6}" y="${H - PAD.bottom}" text-anchor="end">0</text>
      ${lines}${ticks}
    </svg>
    <figcaption>${title}: requests per hour (UTC), by client.</figcaption>
    <ul class="legend">
      ${shown.map((s, k) => html`<li><span class="swatch" style="background:${PALETTE[k]}"></span>${s.label} (${num(sum(s.counts))})</li>`)}
    </ul>
  </figure>`;
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
