/**
 * A chart's values reference: one Markdown page with a row per value path of its values.schema.json
 * (draft-07): type, default (values.yaml, else the schema's `default`), what is allowed and the
 * description. `npm run helm:docs` (helm/docs/values-docs.mjs) writes it for each chart.
 *
 * A named definition with properties (`#/definitions/x`) is written out once, where the walk first
 * meets it; later uses point there, so a shared shape is not repeated at every place it is used.
 */
export type Schema = boolean | SchemaObject;
export interface SchemaObject {
  $ref?: string;
  title?: string;
  description?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  additionalProperties?: Schema;
  propertyNames?: Schema;
  items?: Schema;
  required?: string[];
  allOf?: Schema[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  if?: Schema;
  then?: Schema;
  not?: Schema;
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  minProperties?: number;
  definitions?: Record<string, Schema>;
}

interface Row {
  path: string;
  type: string;
  default: string;
  allowed: string;
  description: string;
}

/** An object's keys gathered from its own `properties` and its `allOf` parts. */
interface Shape {
  properties: Map<string, SchemaObject[]>;
  required: Set<string>;
  notes: string[];
  /** The keys of parts written out elsewhere: listed here only where values.yaml sets them. */
  inherited: Map<string, SchemaObject[]>;
}

const add = (to: Map<string, SchemaObject[]>, key: string, parts: SchemaObject[]) => to.set(key, [...(to.get(key) ?? []), ...parts]);

/** Defaults longer than this are left to values.yaml, where they are commented. */
const LONGEST_DEFAULT = 160;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const code = (v: unknown) => '`' + (typeof v === 'string' ? v || '""' : JSON.stringify(v)) + '`';
const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');
const asObject = (s: Schema): SchemaObject => (s === true ? {} : s === false ? { not: {} } : s);
/** The type of `{type: string}` and the like: said in the parent's type, no row of its own. */
const bareType = (s: Schema | undefined): string | undefined =>
  isObject(s) && Object.keys(s).length === 1 && typeof s.type === 'string' ? s.type : undefined;

function range(min: number | undefined, max: number | undefined, unit = ''): string[] {
  if (min !== undefined && max !== undefined) return [min === max ? `${unit}${min}` : `${unit}${min}–${max}`];
  if (min !== undefined) return [`${unit}≥ ${min}`];
  return max !== undefined ? [`${unit}≤ ${max}`] : [];
}

class ReferenceWalk {
  readonly rows: Row[] = [];
  readonly rules: string[] = [];
  /** Definition name → the path it was written out at. */
  private readonly written = new Map<string, string>();

  constructor(private readonly root: SchemaObject) {}

  /** Follows `$ref`s (JSON pointers into this schema); a description beside a `$ref` wins. */
  deref(schema: Schema): { node: SchemaObject; name?: string } {
    let node = asObject(schema);
    let name: string | undefined;
    const description = node.description;
    for (let hops = 0; node.$ref !== undefined && hops < 20; hops++) {
      const ref = node.$ref;
      name = /^#\/definitions\/([^/]+)$/.exec(ref)?.[1] ?? name;
      let target: unknown = this.root;
      for (const key of ref.replace(/^#\/?/, '').split('/').filter(Boolean)) {
        const step = key.replace(/~1/g, '/').replace(/~0/g, '~');
        target = typeof target === 'object' && target !== null ? (target as Record<string, unknown>)[step] : undefined;
      }
      if (target === undefined) throw new Error(`values-reference: ${ref} points nowhere`);
      node = asObject(target as Schema);
    }
    return { node: description ? { ...node, description } : node, name };
  }

  /** The keys of an object node, `allOf` merged in; conditional parts become rules. */
  shape(node: SchemaObject, path: string): Shape {
    const into: Shape = { properties: new Map(), required: new Set(), notes: [], inherited: new Map() };
    for (const part of node.allOf ?? []) {
      const { node: p, name } = this.deref(part);
      const seenAt = name && this.written.get(name);
      if (seenAt) {
        into.notes.push(`Also every key of ${name}, listed under \`${seenAt}\`.`);
        for (const [key, s] of Object.entries(p.properties ?? {})) add(into.inherited, key, [asObject(s)]);
      } else if (p.if || p.then) {
        if (p.description) this.rules.push(path ? `\`${path}\`: ${p.description}` : p.description);
      } else {
        const own = this.shape(p, path);
        if (name && own.properties.size) this.written.set(name, path);
        if (p.description && p.properties && !name) this.rules.push(p.description);
        for (const [key, parts] of own.properties) add(into.properties, key, parts);
        for (const [key, parts] of own.inherited) add(into.inherited, key, parts);
        for (const key of own.required) into.required.add(key);
        into.notes.push(...own.notes);
      }
    }
    for (const [key, s] of Object.entries(node.properties ?? {})) add(into.properties, key, [asObject(s)]);
    for (const key of node.required ?? []) into.required.add(key);
    return into;
  }

  typeOf(node: SchemaObject): string {
    const alternatives = node.anyOf ?? node.oneOf;
    if (node.type) return ([] as string[]).concat(node.type).join(' or ');
    if (node.enum) return [...new Set(node.enum.map((v) => (v === null ? 'null' : typeof v)))].join(' or ');
    if ('const' in node) return node.const === null ? 'null' : typeof node.const;
    if (alternatives) return [...new Set(alternatives.map((a) => this.typeOf(this.deref(a).node)))].join(' or ');
    return 'not' in node ? 'never' : 'any';
  }

  /** What the schema allows beyond the type, in words. */
  allowed(node: SchemaObject): string[] {
    const out: string[] = [];
    if ('not' in node && Object.keys(node).length === 1) out.push('must not be set');
    if (node.enum) out.push(`one of ${node.enum.map(code).join(', ')}`);
    if ('const' in node) out.push(`only ${code(node.const)}`);
    out.push(...range(node.minimum, node.maximum));
    if (node.exclusiveMinimum !== undefined) out.push(`> ${node.exclusiveMinimum}`);
    if (node.exclusiveMaximum !== undefined) out.push(`< ${node.exclusiveMaximum}`);
    if (node.maxLength === 0) out.push('empty');
    else out.push(...range(node.minLength, node.maxLength, 'length '));
    if (node.pattern !== undefined) out.push(`pattern ${code(node.pattern)}`);
    out.push(...range(node.minItems, node.maxItems, 'items '));
    if (node.uniqueItems) out.push('no duplicates');
    if (node.minProperties !== undefined) out.push(node.minProperties === 1 ? 'not empty' : `at least ${node.minProperties} keys`);
    for (const key of node.required ?? []) if (!node.properties?.[key]) out.push(`\`${key}\` required`);
    const alternatives = node.anyOf ?? node.oneOf;
    if (alternatives) out.push(`${node.oneOf ? 'one' : 'any'} of: ${alternatives.map((a) => this.alternative(a)).join(' / ')}`);
    return out;
  }

  /** One branch of an anyOf/oneOf: its constraints and those of the keys it sets. */
  private alternative(schema: Schema): string {
    const alt = this.deref(schema).node;
    const names = new Set([...(alt.required ?? []), ...Object.keys(alt.properties ?? {})]);
    const keys = [...names].map((key) => {
      const s = alt.properties?.[key];
      const says = [...(alt.required?.includes(key) ? ['set'] : []), ...(s === undefined ? [] : this.allowed(this.deref(s).node))];
      return [`\`${key}\``, says.join(', ')].join(' ');
    });
    return [...this.allowed({ ...alt, properties: undefined, required: undefined }), ...keys].join(', ') || this.typeOf(alt);
  }

  /** The row of one value path, then the rows of what it holds. */
  entry(
    path: string,
    schemas: SchemaObject[],
    value: unknown,
    how: { required?: boolean; keyRule?: string; concrete?: boolean } = {},
  ): void {
    const resolved = schemas.map((s) => this.deref(s));
    const node: SchemaObject = Object.assign({}, ...resolved.map((r) => r.node)) as SchemaObject;
    node.description = resolved.find((r) => r.node.description)?.node.description;
    const name = resolved.find((r) => r.name)?.name;
    const allowed = [
      ...(how.required ? ['required'] : []),
      ...(how.keyRule ? [how.keyRule] : []),
      ...resolved.flatMap((r) => this.allowed(r.node)),
    ];
    const seenAt = name && this.written.get(name);
    const shape = seenAt ? undefined : this.shape(node, path);
    if (name && shape?.properties.size) this.written.set(name, path);

    const [extraType, itemsType] = [bareType(node.additionalProperties), bareType(node.items)];
    let type = this.typeOf(node);
    if (isObject(node.additionalProperties) && !shape?.properties.size) type = extraType ? `map of ${extraType}` : 'map';
    if (itemsType) type = `array of ${itemsType}`;
    const notes = seenAt ? [`As under \`${seenAt}\` (${name}).`] : (shape?.notes ?? []);
    const shown = value !== undefined ? value : node.default;
    const listed = shape && this.keysListed(node, shape, value).length > 0;
    const text = shown === undefined || listed ? '' : JSON.stringify(shown);
    this.rows.push({
      path,
      type,
      default: text.length > LONGEST_DEFAULT ? 'see values.yaml' : text && code(shown),
      allowed: allowed.join('; '),
      // A key values.yaml sets in a map: the map's `<key>` row above describes it.
      description: [how.concrete ? '' : (node.description ?? ''), ...notes].filter(Boolean).join(' '),
    });
    if (shape) this.children(path, node, shape, value, !extraType, !itemsType);
  }

  /** Keys with rows under an object: its properties, and the keys values.yaml sets in it. */
  private keysListed(node: SchemaObject, shape: Shape, value: unknown): string[] {
    const set = isObject(value) ? Object.keys(value) : [];
    const extra = set.filter((k) => !shape.properties.has(k) && (shape.inherited.has(k) || isObject(node.additionalProperties)));
    return [...shape.properties.keys(), ...extra];
  }

  private children(path: string, node: SchemaObject, shape: Shape, value: unknown, mapRow: boolean, itemRow: boolean): void {
    const extra = node.additionalProperties;
    const at = (key: string) => (isObject(value) ? value[key] : undefined);
    for (const [key, parts] of shape.properties) this.entry(`${path}.${key}`, parts, at(key), { required: shape.required.has(key) });
    if (isObject(extra) && mapRow) {
      const keys = node.propertyNames === undefined ? undefined : this.deref(node.propertyNames);
      const rule = keys ? this.allowed(keys.node).join(', ') : '';
      this.entry(`${path}.<${keys?.name ?? 'key'}>`, [extra], undefined, { keyRule: rule && `key: ${rule}` });
    }
    for (const key of this.keysListed(node, shape, value).filter((k) => !shape.properties.has(k))) {
      const inherited = shape.inherited.get(key);
      this.entry(`${path}.${key}`, inherited ?? [asObject(extra ?? true)], at(key), { concrete: !inherited });
    }
    if (isObject(node.items) && itemRow) this.entry(`${path}[]`, [node.items], undefined);
  }
}

/** The reference page of a chart: `schema` is its values.schema.json, `values` its values.yaml. */
export function renderValuesReference(schema: SchemaObject, values: unknown): string {
  const walk = new ReferenceWalk(schema);
  const top = walk.shape(schema, '');
  for (const [key, parts] of top.properties) {
    walk.entry(key, parts, isObject(values) ? values[key] : undefined, { required: top.required.has(key) });
  }
  const lines = [
    `# ${schema.title ?? 'Values'}`,
    '',
    '<!-- Generated from values.schema.json and values.yaml by `npm run helm:docs`: edit those, not this page. -->',
    '',
    ...(schema.description ? [schema.description, ''] : []),
    'Every value the chart reads: `a.b` is key `b` of `a`, `a[]` an entry of list `a`, `a.<name>` any key',
    'of map `a`. Defaults are those of values.yaml, commented there key by key.',
    '',
    ...(walk.rules.length ? ['Across values:', '', ...walk.rules.map((r) => `- ${r}`), ''] : []),
    '| value | type | default | allowed | description |',
    '|---|---|---|---|---|',
    ...walk.rows.map((r) => `| ${[`\`${r.path}\``, r.type, r.default, r.allowed, r.description].map(cell).join(' | ')} |`),
  ];
  return lines.join('\n') + '\n';
}
