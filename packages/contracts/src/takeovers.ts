import { Kind, parse, type ConstDirectiveNode, type DocumentNode, type SelectionSetNode, type TypeNode, type ValueNode } from 'graphql';
import type { SchemaChange } from './changes';

/**
 * Cross-service takeovers: a subgraph taking over, reading or resolving fields another service
 * defines. Clients see no change in the API schema, so schemaChanges() reports nothing, yet the
 * owner's rules for that data (e.g. content's privacy rule for `User.email`) stop being the only
 * ones that apply: a team doing so must say why (an acknowledgement).
 */
export const TAKEOVER_CHANGE_TYPES = [
  'FIELD_OVERRIDE_ADDED',
  'REQUIRES_FOREIGN_FIELD_ADDED',
  'PROVIDES_FOREIGN_FIELD_ADDED',
  'ENTITY_EXTENDED_ADDED',
] as const;

/** Whether a change is one of takeoverChanges' (usage says nothing about whose data it is). */
export const isTakeoverChange = (c: { type: string }) => (TAKEOVER_CHANGE_TYPES as readonly string[]).includes(c.type);

/** The federation directives this looks at, by their unprefixed names. */
const WATCHED = ['key', 'override', 'requires', 'provides', 'external'] as const;
type Watched = (typeof WATCHED)[number];

interface FieldInfo {
  /** The named type it returns (lists and non-null unwrapped). */
  type: string;
  external: boolean;
  override?: { from: string; label?: string };
  requires?: string;
  provides?: string;
}

interface TypeInfo {
  /** The top-level field names of every `@key`. */
  keyFields: Set<string>;
  hasKey: boolean;
  fields: Map<string, FieldInfo>;
}

type Subgraph = Map<string, TypeInfo>;

/**
 * What each directive name in a subgraph means: `@federation__x` (or `@<as>__x` when the link is
 * renamed), the names `@link(import: …)` gives, and the bare name unless it was imported renamed.
 */
function directiveNames(doc: DocumentNode): Map<string, Watched> {
  let prefix = 'federation';
  const imported = new Map<string, Watched>();
  const renamed = new Set<Watched>();
  const str = (v: ValueNode | undefined) => (v?.kind === Kind.STRING ? v.value : undefined);
  for (const def of doc.definitions) {
    if (def.kind !== Kind.SCHEMA_DEFINITION && def.kind !== Kind.SCHEMA_EXTENSION) continue;
    for (const d of def.directives ?? []) {
      if (d.name.value !== 'link' || !/specs\.apollo\.dev\/federation\//.test(str(arg(d, 'url')) ?? '')) continue;
      prefix = str(arg(d, 'as'))?.replace(/^@/, '') ?? prefix;
      const list = arg(d, 'import');
      for (const item of list?.kind === Kind.LIST ? list.values : []) {
        const name = item.kind === Kind.STRING ? item.value : item.kind === Kind.OBJECT ? str(objField(item, 'name')) : undefined;
        const as = item.kind === Kind.OBJECT ? str(objField(item, 'as')) : undefined;
        const bare = name?.replace(/^@/, '') as Watched | undefined;
        if (!bare || !WATCHED.includes(bare)) continue;
        const alias = (as ?? name)!.replace(/^@/, '');
        imported.set(alias, bare);
        if (alias !== bare) renamed.add(bare);
      }
    }
  }
  const names = new Map<string, Watched>();
  for (const w of WATCHED) {
    names.set(`${prefix}__${w}`, w);
    if (!renamed.has(w)) names.set(w, w);
  }
  for (const [alias, w] of imported) names.set(alias, w);
  return names;
}

const arg = (d: ConstDirectiveNode, name: string) => d.arguments?.find((a) => a.name.value === name)?.value;
const objField = (v: ValueNode & { kind: Kind.OBJECT }, name: string) => v.fields.find((f) => f.name.value === name)?.value;
const stringArg = (d: ConstDirectiveNode, name: string) => {
  const v = arg(d, name);
  return v?.kind === Kind.STRING ? v.value : undefined;
};
const namedType = (t: TypeNode): string => (t.kind === Kind.NAMED_TYPE ? t.name.value : namedType(t.type));

/** The object and interface types of a subgraph SDL, definitions and extensions merged. */
function subgraphOf(sdl: string): Subgraph {
  const doc = parse(sdl, { noLocation: true });
  const names = directiveNames(doc);
  const watched = (d: ConstDirectiveNode) => names.get(d.name.value);
  const types: Subgraph = new Map();
  for (const def of doc.definitions) {
    if (
      def.kind !== Kind.OBJECT_TYPE_DEFINITION &&
      def.kind !== Kind.OBJECT_TYPE_EXTENSION &&
      def.kind !== Kind.INTERFACE_TYPE_DEFINITION &&
      def.kind !== Kind.INTERFACE_TYPE_EXTENSION
    )
      continue;
    const info = types.get(def.name.value) ?? { keyFields: new Set<string>(), hasKey: false, fields: new Map<string, FieldInfo>() };
    types.set(def.name.value, info);
    let allExternal = false;
    for (const d of def.directives ?? []) {
      if (watched(d) === 'external') allExternal = true;
      if (watched(d) !== 'key') continue;
      info.hasKey = true;
      for (const f of topLevelFields(stringArg(d, 'fields') ?? '')) info.keyFields.add(f);
    }
    for (const field of def.fields ?? []) {
      const fi: FieldInfo = { type: namedType(field.type), external: allExternal };
      for (const d of field.directives ?? []) {
        const w = watched(d);
        if (w === 'external') fi.external = true;
        else if (w === 'override') {
          const from = stringArg(d, 'from');
          const label = stringArg(d, 'label');
          if (from !== undefined) fi.override = label === undefined ? { from } : { from, label };
        } else if (w === 'requires') fi.requires = stringArg(d, 'fields');
        else if (w === 'provides') fi.provides = stringArg(d, 'fields');
      }
      info.fields.set(field.name.value, fi);
    }
  }
  return types;
}

/** A FieldSet (`"id"`, `"address { city }"`) as a selection set; undefined when it does not parse. */
function selectionOf(fields: string): SelectionSetNode | undefined {
  try {
    const op = parse(`{ ${fields} }`, { noLocation: true }).definitions[0];
    return op?.kind === Kind.OPERATION_DEFINITION ? op.selectionSet : undefined;
  } catch {
    return undefined;
  }
}

function topLevelFields(fields: string): string[] {
  return (selectionOf(fields)?.selections ?? []).flatMap((s) => (s.kind === Kind.FIELD ? [s.name.value] : []));
}

/** Every `Type.field` a FieldSet on `type` names, nested selections and inline fragments included. */
function coordinatesOf(type: string, fields: string, typeOf: (type: string, field: string) => string | undefined): string[] {
  const out: string[] = [];
  const walk = (t: string, set: SelectionSetNode) => {
    for (const s of set.selections) {
      if (s.kind === Kind.INLINE_FRAGMENT) walk(s.typeCondition?.name.value ?? t, s.selectionSet);
      else if (s.kind === Kind.FIELD && s.name.value !== '__typename') {
        out.push(`${t}.${s.name.value}`);
        const child = s.selectionSet && typeOf(t, s.name.value);
        if (s.selectionSet && child) walk(child, s.selectionSet);
      }
    }
  };
  const set = selectionOf(fields);
  if (set) walk(type, set);
  return out;
}

/** `content's User.email`, `payments' Order entity`, or `the User.id of auth and content` when several own it. */
function ownedBy(owners: readonly string[], thing: string): string {
  if (owners.length === 1) return `${owners[0]}${owners[0]!.endsWith('s') ? "'" : "'s"} ${thing}`;
  return `the ${thing} of ${owners.slice(0, -1).join(', ')} and ${owners[owners.length - 1]}`;
}

/** The fields a subgraph itself resolves on a type: neither external nor only its key. */
const contributed = (t: TypeInfo | undefined) => [...(t?.fields ?? [])].filter(([name, f]) => !f.external && !t!.keyFields.has(name));

/**
 * What `service`'s new SDL (`after`) takes from other services that its previous one (`before`;
 * undefined when first published) did not: an `@override(from:)` (FIELD_OVERRIDE_ADDED), a
 * `@requires` or `@provides` naming a field another service defines (REQUIRES_/
 * PROVIDES_FOREIGN_FIELD_ADDED, path that foreign field), a `@key` type it newly contributes fields
 * to while others define it (ENTITY_EXTENDED_ADDED). Each is breaking: it needs an acknowledgement.
 * `others` are the other services' SDLs (REST-only services have none); one that does not parse
 * is left out. A service's own fields (defined by no other, or not external here) are not reported.
 */
export function takeoverChanges(
  service: string,
  before: string | undefined,
  after: string,
  others: readonly { service: string; sdl: string }[],
): SchemaChange[] {
  const now = subgraphOf(after);
  const was: Subgraph = before === undefined ? new Map<string, TypeInfo>() : subgraphOf(before);
  const rest = others.flatMap((o) => {
    if (o.service === service) return [];
    try {
      return [{ service: o.service, types: subgraphOf(o.sdl) }];
    } catch {
      return [];
    }
  });
  const typeOf = (sg: Subgraph) => (t: string, f: string) =>
    sg.get(t)?.fields.get(f)?.type ?? rest.map((o) => o.types.get(t)?.fields.get(f)?.type).find((x) => x !== undefined);
  /** The other services that resolve `T.f` themselves, unless this one does too (then it is shared). */
  const ownersOf = (coordinate: string): string[] => {
    const [t, f] = coordinate.split('.') as [string, string];
    const mine = now.get(t)?.fields.get(f);
    if (mine && !mine.external) return [];
    return rest.filter((o) => o.types.get(t)?.fields.get(f)?.external === false).map((o) => o.service);
  };

  const changes: SchemaChange[] = [];
  // One change per foreign coordinate (what an acknowledgement names), listing every new reader.
  const readers = new Map<string, { type: string; path: string; owners: string[]; on: string[]; directive: 'requires' | 'provides' }>();
  for (const [t, info] of now) {
    for (const [f, field] of info.fields) {
      const old = was.get(t)?.fields.get(f);
      if (field.override && field.override.from !== service && old?.override?.from !== field.override.from) {
        const label = field.override.label === undefined ? '' : `, label "${field.override.label}"`;
        changes.push({
          type: 'FIELD_OVERRIDE_ADDED',
          path: `${t}.${f}`,
          message: `${service} takes over ${t}.${f} from ${field.override.from} (@override${label})`,
          breaking: true,
        });
      }
      for (const directive of ['requires', 'provides'] as const) {
        const fields = field[directive];
        if (fields === undefined) continue;
        // @requires names fields of the type it is on; @provides, fields of the type returned.
        const on = directive === 'requires' ? t : field.type;
        const oldFields = old?.[directive];
        const had = new Set(oldFields === undefined ? [] : coordinatesOf(on, oldFields, typeOf(was)));
        for (const coordinate of coordinatesOf(on, fields, typeOf(now))) {
          const owners = had.has(coordinate) ? [] : ownersOf(coordinate);
          if (owners.length === 0) continue;
          const type = directive === 'requires' ? 'REQUIRES_FOREIGN_FIELD_ADDED' : 'PROVIDES_FOREIGN_FIELD_ADDED';
          const key = `${type} ${coordinate}`;
          const r = readers.get(key) ?? { type, path: coordinate, owners, on: [], directive };
          r.on.push(`${t}.${f}`);
          readers.set(key, r);
        }
      }
    }
  }
  for (const r of readers.values()) {
    const verb = r.directive === 'requires' ? `reads ${ownedBy(r.owners, r.path)}` : `resolves ${ownedBy(r.owners, r.path)} itself`;
    changes.push({ type: r.type, path: r.path, message: `${service} ${verb} (@${r.directive} on ${r.on.join(', ')})`, breaking: true });
  }
  for (const [t, info] of now) {
    if (!info.hasKey || contributed(info).length === 0 || contributed(was.get(t)).length > 0) continue;
    const definers = rest.filter((o) => o.types.has(t));
    if (definers.length === 0) continue;
    // Owners are those resolving fields of it; a stub (`resolvable: false`, its key only) owns nothing.
    const resolving = definers.filter((o) => contributed(o.types.get(t)).length > 0);
    const owners = (resolving.length ? resolving : definers).map((o) => o.service);
    changes.push({
      type: 'ENTITY_EXTENDED_ADDED',
      path: t,
      message: `${service} now contributes fields to ${ownedBy(owners, `${t} entity`)} (@key)`,
      breaking: true,
    });
  }
  return changes;
}
