/**
 * The Studio's HTML: server-rendered pages, one stylesheet inline, no script and nothing fetched
 * from elsewhere (docs/registry.md, "Studio"). Every value a service team or a client put into the
 * registry (SDL descriptions, client names, acknowledgements, operation bodies) goes through `esc`.
 */

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text safe in element content and in quoted attribute values. */
export const esc = (value: string | number | boolean | null | undefined): string =>
  (value === null || value === undefined ? '' : String(value)).replace(/[&<>"']/g, (c) => ESCAPES[c]!);

/** Markup already escaped (a fragment built by these helpers), passed through `html` untouched. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

/** A tagged template: interpolated values are escaped unless they are Html (or lists of it). */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!;
  values.forEach((v, i) => {
    out += render(v) + strings[i + 1]!;
  });
  return new Html(out);
}

function render(v: unknown): string {
  if (v instanceof Html) return v.text;
  if (Array.isArray(v)) return v.map(render).join('');
  if (v === null || v === undefined || v === false) return '';
  return esc(typeof v === 'object' ? JSON.stringify(v) : (v as string | number | boolean));
}

/** A time as people read it (UTC, to the minute), with the exact instant in `datetime`. */
export const time = (iso: string | null | undefined): Html =>
  iso ? html`<time datetime="${iso}">${iso.slice(0, 16).replace('T', ' ')} UTC</time>` : html`—`;

/** Thousands grouped: 12 345. */
export const num = (n: number): string => n.toLocaleString('en-US').replace(/,/g, '\u2009');

const NAV = [
  ['/studio', 'Overview'],
  ['/studio/schema', 'Schema'],
  ['/studio/services', 'History'],
  ['/studio/checks', 'Checks'],
  ['/studio/usage', 'Usage'],
  ['/studio/clients', 'Clients'],
] as const;

const STYLE = `
:root{color-scheme:light dark;--fg:#1b1f24;--muted:#57606a;--bg:#fff;--panel:#f6f8fa;--line:#d0d7de;--accent:#0a58ca;--bad:#b42318;--good:#1a7f37;--warn:#9a6700;--add:#dafbe1;--del:#ffebe9}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9da7b3;--bg:#0d1117;--panel:#161b22;--line:#30363d;--accent:#6cb6ff;--bad:#ff7b72;--good:#56d364;--warn:#e3b341;--add:#12361f;--del:#3d1518}}
*{box-sizing:border-box}body{margin:0;font:15px/1.5 system-ui,sans-serif;color:var(--fg);background:var(--bg)}
a{color:var(--accent)}a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.skip{position:absolute;left:-9999px}.skip:focus{left:1rem;top:1rem;background:var(--bg);padding:.5rem;z-index:1}
header{display:flex;gap:1.5rem;align-items:center;padding:.75rem 1.5rem;border-bottom:1px solid var(--line);background:var(--panel);flex-wrap:wrap}
header .brand{font-weight:700;text-decoration:none;color:var(--fg)}nav ul{display:flex;gap:1rem;list-style:none;margin:0;padding:0;flex-wrap:wrap}
nav a[aria-current=page]{font-weight:700;text-decoration:none;color:var(--fg)}
main{padding:1rem 1.5rem 3rem;max-width:1200px}h1{font-size:1.5rem;margin:.5rem 0 1rem}h2{font-size:1.15rem;margin:1.5rem 0 .5rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1rem}caption{text-align:left;font-size:.85rem}th,td{text-align:left;padding:.35rem .6rem;border-bottom:1px solid var(--line);vertical-align:top}
th{font-weight:600;background:var(--panel)}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
code,pre{font:13px/1.45 ui-monospace,monospace}pre{background:var(--panel);padding:.75rem;overflow:auto;border:1px solid var(--line)}
.muted{color:var(--muted)}.bad{color:var(--bad)}.good{color:var(--good)}.warn{color:var(--warn)}
.tag{display:inline-block;padding:0 .4rem;border:1px solid var(--line);border-radius:.6rem;font-size:.8rem;margin-right:.25rem}
.stale{background:var(--del)}.unused{color:var(--muted)}
.diff{display:grid;grid-template-columns:1fr 1fr;gap:.5rem}.diff pre{margin:0}.diff .add{background:var(--add)}.diff .del{background:var(--del)}
form.inline{display:flex;gap:.5rem;align-items:end;flex-wrap:wrap;margin:.5rem 0 1rem}label{display:flex;flex-direction:column;font-size:.85rem}
input,select,button{font:inherit;padding:.3rem .5rem;border:1px solid var(--line);background:var(--bg);color:var(--fg)}button{cursor:pointer;background:var(--panel)}
figure{margin:1rem 0}figcaption{color:var(--muted);font-size:.85rem}svg text{fill:var(--muted);font-size:11px}
.legend{display:flex;gap:1rem;flex-wrap:wrap;font-size:.85rem;list-style:none;padding:0}.swatch{display:inline-block;width:.8rem;height:.8rem;margin-right:.3rem;vertical-align:middle}
details summary{cursor:pointer}
`;

/** A whole page: landmarks, a skip link, the navigation with the current section marked. */
export function page(opts: { title: string; section: string; body: Html; who?: string | undefined }): string {
  const nav = NAV.map(
    ([href, label]) => html`<li><a href="${href}" ${opts.section === href ? html` aria-current="page"` : ''}>${label}</a></li>`,
  );
  const doc = html`<html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title>${opts.title} · Halo Studio</title>
      <style>
        ${new Html(STYLE)}
      </style>
    </head>
    <body>
      <a class="skip" href="#main">Skip to content</a>
      <header>
        <a class="brand" href="/studio">Halo Studio</a>
        <nav aria-label="Studio">
          <ul>
            ${nav}
          </ul>
        </nav>
        ${opts.who ? html`<span class="muted">${opts.who}</span>` : ''}
      </header>
      <main id="main">
        <h1>${opts.title}</h1>
        ${opts.body}
      </main>
    </body>
  </html>`;
  return `<!doctype html>${doc.text}`;
}

/** A table with a caption (visible or for screen readers) and header cells with scope. */
export function table(
  caption: string,
  head: readonly (string | readonly [string, 'n'])[],
  rows: readonly Html[],
  empty = 'Nothing yet.',
): Html {
  if (rows.length === 0) return html`<p class="muted">${empty}</p>`;
  const th = head.map((h) => (Array.isArray(h) ? html`<th scope="col" class="n">${h[0]}</th>` : html`<th scope="col">${h}</th>`));
  return html`<table>
    <caption class="muted">
      ${caption}
    </caption>
    <thead>
      <tr>
        ${th}
      </tr>
    </thead>
    <tbody>
      ${rows}
    </tbody>
  </table>`;
}
