import { badRequest } from '@halo/kit/errors';
import type { ClientVersionSummary } from '../domain/client-operations';
import type { Registry } from '../domain/registry';
import { CLIENT_NAME as CLIENT, CLIENT_VERSION as VERSION } from '@halo/contracts/wire';
import { html, num, table, time, type Html } from './html';

/**
 * Clients: the operation lists client apps registered, per client and version (active or
 * retired), and one version's operations with their bodies. An active version's operations hold
 * back a breaking change in checks until it is retired.
 */

const PUSH_COMMAND = 'npm run operations -- push --client web --version 1.4.0 manifest.json';

/** A version's page: both parts percent-encoded, so `@halo/client` stays one path segment. */
export const clientVersionPath = (client: string, version: string): string =>
  `/studio/clients/${encodeURIComponent(client)}/${encodeURIComponent(version)}`;

const stateOf = (retiredAt: string | null): Html =>
  retiredAt ? html`<span class="tag">retired</span> ${time(retiredAt)}` : html`<span class="tag good">active</span>`;

export async function clientsPage(registry: Registry): Promise<Html> {
  const versions = await registry.operations.list();
  if (versions.length === 0) {
    return html`<p class="muted">No client app has registered its operations yet.</p>
      <p>A client team registers the operations one version of its app sends, from its persisted-query manifest:</p>
      <pre>${PUSH_COMMAND}</pre>`;
  }
  // The list comes by client, newest push first within each.
  const byClient = new Map<string, ClientVersionSummary[]>();
  for (const v of versions) byClient.set(v.client, [...(byClient.get(v.client) ?? []), v]);
  const sections = [...byClient].map(([client, list]) => {
    const rows = list.map(
      (v) =>
        html`<tr>
          <th scope="row"><a href="${clientVersionPath(v.client, v.version)}">${v.version}</a></th>
          <td>${stateOf(v.retiredAt)}</td>
          <td class="n">${num(v.operations)}</td>
          <td>${time(v.pushedAt)}</td>
          <td>${v.pushedBy}</td>
        </tr>`,
    );
    return html`<section aria-label="${client}">
      <h2>${client}</h2>
      ${table(`Versions of ${client}, newest push first`, ['version', 'state', ['operations', 'n'], 'pushed', 'pushed by'], rows)}
    </section>`;
  });
  return html`<p>
      The operations each client app version registered, validated against the schema when pushed. An active version's operations hold back
      a breaking change in checks until the version is retired. Register one with <code>${PUSH_COMMAND}</code>.
    </p>
    ${sections}`;
}

export async function clientVersionPage(registry: Registry, client: string, version: string): Promise<Html> {
  if (!CLIENT.test(client)) throw badRequest(`not a client name: ${client} (1 to 64 of A–Z, a–z, 0–9 and . _ @ / -)`);
  if (!VERSION.test(version)) throw badRequest(`not a client version: ${version} (1 to 64 of A–Z, a–z, 0–9 and . _ + -)`);
  const v = await registry.operations.get(client, version);
  const state = v.retiredAt
    ? html`<p>
        <span class="tag">retired</span> since ${time(v.retiredAt)}: its operations no longer hold back any check, and it takes no further
        push.
      </p>`
    : html`<p>
        <span class="tag good">active</span> Its operations hold back a breaking change in checks: a change one of them uses is refused
        until this version is retired or the change acknowledged.
      </p>`;
  const rows = v.operations.map(
    (o) =>
      html`<tr>
        <th scope="row">${o.name ? html`<code>${o.name}</code>` : html`<span class="muted">anonymous</span>`}</th>
        <td><code>${o.id}</code></td>
        <td><pre>${o.body}</pre></td>
      </tr>`,
  );
  return html`<p><a href="/studio/clients">← Clients</a></p>
    ${state}
    <p>Pushed ${time(v.pushedAt)} by ${v.pushedBy}; ${num(v.operations.length)} operations.</p>
    ${table(`The operations of ${client} ${version}, by name`, ['operation', 'id', 'body'], rows, 'No operations.')}`;
}
