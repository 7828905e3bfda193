import { notFound } from '@halo/kit/errors';
import type { Registry } from '../domain/registry';
import { html, num, table, type Html } from './html';
import { schemaModel, type SchemaType } from './schema-model';

/**
 * The schema explorer: the current composition's API schema by type and field, each with its
 * owning services, description, deprecation, cost weight, access rule and usage in the window.
 */

/** The current composition's model, kept while the composition is the same (one parse per composition). */
const models = new Map<number, SchemaType[]>();

async function currentModel(registry: Registry): Promise<{ composition: number; types: SchemaType[] } | null> {
  const head = await registry.supergraph();
  if (!head || 'notModified' in head) return null;
  let types = models.get(head.composition);
  if (!types) {
    types = schemaModel(head.supergraph);
    models.clear();
    models.set(head.composition, types);
  }
  return { composition: head.composition, types };
}

export type UsageTotals = Map<string, { count: number; clients: number }>;

const KIND_LABEL: Record<SchemaType['kind'], string> = {
  object: 'Object types',
  interface: 'Interfaces',
  input: 'Input types',
  enum: 'Enums',
  union: 'Unions',
  scalar: 'Scalars',
};

export async function schemaPage(registry: Registry, usage: UsageTotals, days: number): Promise<Html> {
  const model = await currentModel(registry);
  if (!model) return html`<p class="muted">Nothing composed yet.</p>`;
  const groups = (Object.keys(KIND_LABEL) as SchemaType['kind'][]).map((kind) => {
    const types = model.types.filter((t) => t.kind === kind);
    if (types.length === 0) return html``;
    return html`<h2>${KIND_LABEL[kind]}</h2>
      <ul class="types">
        ${types.map((t) => {
          const used = t.fields.reduce((n, f) => n + (usage.get(`${t.name}.${f.name}`)?.count ?? 0), 0);
          const unused = t.fields.filter((f) => !usage.has(`${t.name}.${f.name}`)).length;
          return html`<li>
            <a href="/studio/schema/${t.name}">${t.name}</a>
            <span class="muted"
              >${t.owners.join(', ')} · ${t.fields.length} ${t.kind === 'enum' ? 'values' : 'fields'}, ${num(used)}
              requests${unused ? `, ${unused} unused` : ''}</span
            >
          </li>`;
        })}
      </ul>`;
  });
  return html`<p>Composition ${model.composition}. Usage over the last ${days} days (<a href="/studio/usage">Usage</a>).</p>
    ${groups}`;
}

export async function typePage(registry: Registry, name: string, usage: UsageTotals, days: number): Promise<Html> {
  const model = await currentModel(registry);
  const type = model?.types.find((t) => t.name === name);
  if (!type) throw notFound(`No type ${name} in the current composition`);
  const rows = type.fields.map((f) => {
    const coordinate = `${type.name}.${f.name}`;
    const used = usage.get(coordinate);
    const access = [
      f.authenticated ? html`<span class="tag">@authenticated</span>` : '',
      ...f.scopes.map((set) => html`<span class="tag">${set.join(' + ')}</span>`),
    ];
    const args = f.args.length
      ? html`<details>
          <summary>${f.args.length} argument${f.args.length > 1 ? 's' : ''}</summary>
          <ul>
            ${f.args.map((a) => html`<li><code>${a.name}: ${a.type}</code> <span class="muted">${a.description ?? ''}</span> · <a href="/studio/usage/${coordinate}.${a.name}">usage</a></li>`)}
          </ul>
        </details>`
      : '';
    return html`<tr${used ? '' : html` class="unused"`}><th scope="row"><code>${f.name}</code></th><td><code>${f.type}</code></td><td>${f.owners.join(', ')}</td><td>${f.description ?? ''}${f.deprecated ? html`<br /><span class="warn">Deprecated: ${f.deprecated}</span>` : ''}${args}</td><td class="n">${f.cost ?? ''}</td><td>${access}</td><td class="n">${used ? html`<a href="/studio/usage/${coordinate}">${num(used.count)}</a> <span class="muted">(${used.clients} client${used.clients === 1 ? '' : 's'})</span>` : html`<span class="muted">unused</span>`}</td></tr>`;
  });
  const head = ['field', 'type', 'owned by', 'description', ['cost', 'n'], 'access', [`requests, ${days} days`, 'n']] as const;
  return html`<p><a href="/studio/schema">← every type</a> · ${type.kind} · owned by ${type.owners.join(', ') || 'none'}</p>
    ${type.description ? html`<p>${type.description}</p>` : ''}
    ${table(`The ${type.kind === 'enum' ? 'values' : 'fields'} of ${type.name}; unused ones are dimmed`, head, rows)}`;
}
