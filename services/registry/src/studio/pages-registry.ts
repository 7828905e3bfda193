import { diffLines } from 'diff';
import type { Registry } from '../domain/registry';
import { html, num, table, time, type Html } from './html';

/**
 * Overview and History: what each service runs, which composition each gateway serves, and each
 * service's versions with what they changed, compared side by side.
 */

/** A gateway not heard from in this long is shown as down (it polls every few seconds). */
const GATEWAY_SILENT_MS = 60_000;

export async function overviewPage(registry: Registry, now = Date.now()): Promise<Html> {
  const [services, head, gateways] = await Promise.all([registry.services(), registry.supergraph(), registry.gateways()]);
  const current = head && !('notModified' in head) ? head : null;
  const routes = await Promise.all(
    services.map(async (s) => (await registry.version(s.service, s.version)).contract.rest?.routes.length ?? 0),
  );
  const serviceRows = services.map(
    (s, i) =>
      html`<tr>
        <th scope="row"><a href="/studio/services/${s.service}">${s.service}</a></th>
        <td class="n">v${s.version}</td>
        <td>${s.author}</td>
        <td>${time(s.publishedAt)}</td>
        <td><code>${s.url}</code></td>
        <td class="n">${routes[i]}</td>
      </tr>`,
  );
  const gatewayRows = gateways.map((g) => {
    const stale = current !== null && g.composition !== current.composition;
    const down = now - Date.parse(g.lastSeen) > GATEWAY_SILENT_MS;
    return html`<tr${stale ? html` class="stale"` : ''}><th scope="row"><code>${g.id}</code></th><td class="n">${g.composition ?? '—'}${stale ? html` <span class="bad">(not the current one)</span>` : ''}</td><td>${time(g.lastSeen)}</td><td>${down ? html`<span class="bad">down</span>` : html`<span class="good">up</span>`}</td></tr>`;
  });
  return html` <h2>Composition</h2>
    ${current ? html`<p>Composition <strong>${current.composition}</strong>, made ${time(current.createdAt)} (<code>${current.hash.slice(0, 12)}</code>). <a href="/studio/schema">Browse its schema</a>.</p>` : html`<p class="muted">Nothing composed yet.</p>`}
    <h2>Services</h2>
    ${table('Every service with its current version', ['service', ['version', 'n'], 'published by', 'when', 'routing URL', ['REST routes', 'n']], serviceRows)}
    <h2>Gateways</h2>
    ${table('The gateways polling this registry: a gateway serving another composition stands out', ['gateway', ['composition served', 'n'], 'last poll', 'state'], gatewayRows, 'No gateway has polled this registry yet.')}`;
}

export async function servicesPage(registry: Registry): Promise<Html> {
  const services = await registry.services();
  return html`<p>Each service's history: every version, who published it, what it changed and why.</p>
    <ul>
      ${services.map((s) => html`<li><a href="/studio/services/${s.service}">${s.service}</a> <span class="muted">v${s.version}, ${time(s.publishedAt)}</span></li>`)}
    </ul>`;
}

const changeTag = (c: { breaking: boolean; acknowledged?: boolean; type: string }) =>
  c.breaking
    ? c.acknowledged
      ? html`<span class="tag warn">acknowledged</span>`
      : html`<span class="tag bad">breaking</span>`
    : c.type.includes('REMOVED')
      ? html`<span class="tag">removed</span>`
      : html`<span class="tag good">added</span>`;

export async function historyPage(registry: Registry, service: string): Promise<Html> {
  const versions = await registry.versions(service);
  const rows = versions.map((v, i) => {
    const previous = versions[i + 1];
    const changes =
      v.changes === null
        ? html`<span class="muted">not recorded</span>`
        : v.changes.length === 0
          ? html`<span class="muted">no change to the API</span>`
          : html`<ul>
              ${v.changes.map((c) => html`<li>${changeTag(c)}${c.message}</li>`)}
            </ul>`;
    return html`<tr>
      <th scope="row" class="n">v${v.version}${v.rollbackOf ? html`<br /><span class="muted">rollback to v${v.rollbackOf}</span>` : ''}</th>
      <td>${time(v.createdAt)}<br />${v.author}</td>
      <td>${changes}${v.acknowledgement ? html`<p><strong>Acknowledged:</strong> ${v.acknowledgement}</p>` : ''}</td>
      <td>
        ${previous ? html`<a href="/studio/services/${service}/versions/${previous.version}...${v.version}">v${previous.version} → v${v.version}</a>` : ''}
      </td>
    </tr>`;
  });
  const newest = versions[0]?.version;
  const form =
    versions.length > 1
      ? html`<form class="inline" method="get" action="/studio/services/${service}/compare">
          <label
            >from
            <select name="from">
              ${versions.map((v) => html`<option${v.version === versions[1]!.version ? ' selected' : ''}>${v.version}</option>`)}
            </select></label
          ><label
            >to
            <select name="to">
              ${versions.map((v) => html`<option${v.version === newest ? ' selected' : ''}>${v.version}</option>`)}
            </select></label
          ><button type="submit">Compare</button>
        </form>`
      : html``;
  return html`${form}${table(`Versions of ${service}, newest first`, [['version', 'n'], 'published', 'changes', 'compare'], rows, `${service} has no versions.`)}`;
}

/** Two versions side by side: the change list a check prints, then their SDL and REST part line by line. */
export async function diffPage(registry: Registry, service: string, from: number, to: number): Promise<Html> {
  const d = await registry.diff(service, from, to);
  const [a, b] = d.versions;
  const text = (v: typeof a) =>
    `${v.contract.sdl ?? ''}\n${
      v.contract.rest
        ? JSON.stringify(
            v.contract.rest.routes.map((r) => `${r.method} ${r.path}`),
            null,
            2,
          )
        : ''
    }\n`;
  const left: Html[] = [];
  const right: Html[] = [];
  for (const part of diffLines(text(a), text(b))) {
    const lines = part.value.replace(/\n$/, '').split('\n');
    const cls = part.added ? 'add' : part.removed ? 'del' : '';
    const block = html`<span${cls ? html` class="${cls}"` : ''}>${lines.join('\n')}\n</span>`;
    if (!part.added) left.push(block);
    if (!part.removed) right.push(block);
    // Keep the two columns aligned: what one side lacks is blank lines on it.
    if (part.added) left.push(html`${'\n'.repeat(lines.length)}`);
    if (part.removed) right.push(html`${'\n'.repeat(lines.length)}`);
  }
  return html`<p><a href="/studio/services/${service}">← ${service}'s history</a></p>
    ${
      d.errors.length
        ? html`<ul class="bad">
            ${d.errors.map((e) => html`<li>${e}</li>`)}
          </ul>`
        : ''
    }
    <h2>Changes from v${from} to v${to}</h2>
    ${
      d.changes.length
        ? html`<ul>
            ${d.changes.map((c) => html`<li>${changeTag(c)}${c.message} <code class="muted">${c.type} ${c.path}</code></li>`)}
          </ul>`
        : html`<p class="muted">No change clients can see.</p>`
    }
    <p>Routing URL: <code>${a.url}</code>${a.url !== b.url ? html` → <code>${b.url}</code>` : ''}</p>
    <h2>SDL and REST routes</h2>
    <div class="diff">
      <section aria-label="v${from}">
        <h3>v${from} <span class="muted">${time(a.createdAt)}</span></h3>
        <pre>${left}</pre>
      </section>
      <section aria-label="v${to}">
        <h3>v${to} <span class="muted">${time(b.createdAt)}</span></h3>
        <pre>${right}</pre>
      </section>
    </div>
    <p class="muted">${num(d.changes.length)} changes.</p>`;
}
