import { badRequest } from '@halo/kit/errors';
import type { TopOperation } from '../domain/model';
import type { Registry } from '../domain/registry';
import { html, num, table, time, type Html } from './html';
import { linePlot } from './plot';

/**
 * Checks and Usage: every check and publish with its result and what blocked it, and for a
 * schema coordinate its requests per hour by client with the operations that use it; the busiest
 * operations, and the clients and versions seen.
 */

const COORDINATE = /^[_A-Za-z][_0-9A-Za-z]*(\.[_A-Za-z][_0-9A-Za-z]*){0,2}$/;
const clientLabel = (client: string, version: string | null | undefined) => (version ? `${client} ${version}` : client);

const outcomeTag = (outcome: string, ok: boolean) => html`<span class="tag ${ok ? 'good' : 'bad'}">${outcome}</span>`;

export async function checksPage(registry: Registry, service: string | undefined): Promise<Html> {
  const checks = await registry.checks({ ...(service ? { service } : {}), limit: 100 });
  const services = await registry.services();
  const rows = checks.map(
    (c) =>
      html`<tr>
        <th scope="row"><a href="/studio/checks/${c.id}">#${c.id}</a></th>
        <td>${time(c.createdAt)}</td>
        <td>${c.service}</td>
        <td>${c.kind}</td>
        <td>${outcomeTag(c.outcome, c.ok)}${c.version ? html` v${c.version}` : ''}</td>
        <td>${c.author}</td>
        <td class="n">${c.changes.length}</td>
        <td>${c.acknowledgement ?? ''}</td>
      </tr>`,
  );
  return html`<form class="inline" method="get" action="/studio/checks">
      <label
        >service
        <select name="service">
          <option value="">every service</option>
          ${services.map((s) => html`<option${s.service === service ? ' selected' : ''}>${s.service}</option>`)}
        </select></label
      ><button type="submit">Show</button>
    </form>
    ${table(`The last checks and publishes${service ? ` of ${service}` : ''}, newest first`, [['check', 'n'], 'when', 'service', 'kind', 'result', 'by', ['changes', 'n'], 'acknowledgement'], rows, 'No check has run yet.')}`;
}

export async function checkPage(registry: Registry, id: number): Promise<Html> {
  const c = await registry.checkById(id);
  const errors = [...c.errors.composition.map((e) => `composition: ${e}`), ...c.errors.rest.map((e) => `REST: ${e}`)];
  const changeRows = c.changes.map((ch) => {
    const ops = ch.usage?.operations ?? [];
    const blocking = ops.length
      ? html`<ul>
          ${ops.map((o) => html`<li><code>${o.name || o.hash.slice(0, 12)}</code> · ${clientLabel(o.client, o.clientVersion)} · ${num(o.count)} · last ${time(o.lastSeen)}</li>`)}
        </ul>`
      : html`<span class="muted">none recorded</span>`;
    return html`<tr>
      <td>
        ${ch.breaking ? html`<span class="tag ${ch.acknowledged ? 'warn' : 'bad'}">${ch.acknowledged ? 'acknowledged' : 'breaking'}</span>` : html`<span class="tag">change</span>`}${ch.message}<br /><code
          class="muted"
          >${ch.type} ${ch.path}</code
        >
      </td>
      <td class="n">
        ${ch.breaking && !ch.path.includes(' ') ? html`<a href="/studio/usage/${ch.path}">${num(ch.usage?.count ?? 0)}</a>` : ''}
      </td>
      <td>${ch.breaking ? blocking : ''}</td>
    </tr>`;
  });
  return html`<p><a href="/studio/checks?service=${c.service}">← ${c.service}'s checks</a></p>
    <p>
      ${c.kind} of <a href="/studio/services/${c.service}">${c.service}</a> by ${c.author}, ${time(c.createdAt)}:
      ${outcomeTag(c.outcome, c.ok)}${c.version ? html` — made <a href="/studio/services/${c.service}">v${c.version}</a>` : ''}
    </p>
    ${c.acknowledgement ? html`<p><strong>Acknowledged:</strong> ${c.acknowledgement}</p>` : ''}
    ${
      errors.length
        ? html`<h2>Composition errors</h2>
            <ul class="bad">
              ${errors.map((e) => html`<li><code>${e}</code></li>`)}
            </ul>`
        : ''
    }
    <h2>Changes</h2>
    ${table('Each change, and the usage that weighed on it (operation, client and version, count, last seen)', ['change', ['requests', 'n'], 'used by'], changeRows, 'No change clients can see.')}
    ${
      c.notes.length
        ? html`<h2>Notes</h2>
            <ul>
              ${c.notes.map((n) => html`<li>${n}</li>`)}
            </ul>`
        : ''
    }`;
}

const OPERATION_COLUMNS = [
  'operation',
  'clients',
  ['requests', 'n'],
  ['cost per request', 'n'],
  ['cost in all', 'n'],
  ['fields used', 'n'],
  'last seen',
] as const;

const operationRows = (ops: readonly TopOperation[]) =>
  ops.map(
    (o) =>
      html`<tr>
        <th scope="row">
          <code>${o.name || o.hash.slice(0, 12)}</code>
          <details>
            <summary>operation</summary>
            <pre>${o.body}</pre>
          </details>
        </th>
        <td>${o.clients.join(', ')}</td>
        <td class="n">${num(o.count)}</td>
        <td class="n">${o.cost ? num(o.cost.perRequest) : html`<span class="muted">not reported</span>`}</td>
        <td class="n">${o.cost ? num(o.cost.total) : ''}</td>
        <td class="n">${o.coordinates}</td>
        <td>${time(o.lastSeen)}</td>
      </tr>`,
  );

export async function usagePage(registry: Registry, days: number): Promise<Html> {
  const [busiest, costliest, clients, coords] = await Promise.all([
    registry.topOperations(days, 25),
    registry.topOperations(days, 25, 'cost'),
    registry.usageClients(days),
    registry.usageByCoordinate(days),
  ]);
  const clientRows = clients.map(
    (c) =>
      html`<tr>
        <th scope="row">${c.client}</th>
        <td>${c.clientVersion || html`<span class="muted">unknown</span>`}</td>
        <td class="n">${num(c.count)}</td>
        <td>${time(c.lastSeen)}</td>
      </tr>`,
  );
  const coordRows = coords.coordinates.slice(0, 50).map(
    (c) =>
      html`<tr>
        <th scope="row"><a href="/studio/usage/${c.coordinate}">${c.coordinate}</a></th>
        <td class="n">${num(c.count)}</td>
        <td class="n">${c.clients}</td>
      </tr>`,
  );
  return html`<p>
      The last ${days} days, as the gateways reported them. Open a field from <a href="/studio/schema">Schema</a> or below for its plot.
    </p>
    <form class="inline" method="get" action="/studio/usage/go">
      <label for="coordinate"
        >A field, argument, type or enum value <input id="coordinate" name="coordinate" placeholder="Product.price" required /></label
      ><button type="submit">Show usage</button>
    </form>
    <h2>Top operations by requests</h2>
    ${table('The busiest operations', [...OPERATION_COLUMNS], operationRows(busiest), 'No usage recorded yet.')}
    <h2>Top operations by cost</h2>
    <p class="muted">
      The cost the gateways estimated for each request (the limits' cost analysis, with its variables), as a mean per request; "in all" is
      that mean times the requests.
    </p>
    ${table('The operations that cost most per request', [...OPERATION_COLUMNS], operationRows(costliest), 'No usage recorded yet.')}
    <h2>Clients and versions</h2>
    ${table('Every client and version seen', ['client', 'version', ['requests', 'n'], 'last seen'], clientRows, 'No usage recorded yet.')}
    <h2>Most used schema coordinates</h2>
    ${table('The 50 most requested coordinates', ['coordinate', ['requests', 'n'], ['clients', 'n']], coordRows, 'No usage recorded yet.')}`;
}

export async function coordinatePage(registry: Registry, coordinate: string, days: number): Promise<Html> {
  if (!COORDINATE.test(coordinate))
    throw badRequest(`not a schema coordinate: ${coordinate} (Type, Type.field, Type.field.argument or Enum.VALUE)`);
  const s = await registry.usageSeries(coordinate, days);
  const total = s.series.reduce((n, x) => n + x.counts.reduce((a, b) => a + b, 0), 0);
  const type = coordinate.split('.')[0]!;
  const opRows = s.operations.map(
    (o) =>
      html`<tr>
        <th scope="row"><code>${o.name || o.hash.slice(0, 12)}</code></th>
        <td>${clientLabel(o.client, o.clientVersion)}</td>
        <td class="n">${num(o.count)}</td>
        <td>${time(o.lastSeen)}</td>
      </tr>`,
  );
  return html`<p>
      <a href="/studio/schema/${type}">← ${type}</a> · ${num(total)} requests in the last ${days}
      days${total === 0 ? html` — <strong>unused</strong>` : ''}.
    </p>
    ${total > 0 ? linePlot({ title: coordinate, hours: s.hours, series: s.series.map((x) => ({ label: clientLabel(x.client, x.clientVersion), counts: x.counts })) }) : ''}
    <h2>Operations that use it</h2>
    ${table(`The operations using ${coordinate}`, ['operation', 'client', ['requests', 'n'], 'last seen'], opRows, 'None in the window.')}`;
}
