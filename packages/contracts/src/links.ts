import { Kind, type ConstDirectiveNode, type DocumentNode } from 'graphql';

/** A directive's string argument (`url`, `as`), if it has one. */
export const stringArg = (d: ConstDirectiveNode, name: string): string | undefined => {
  const v = d.arguments?.find((a) => a.name.value === name)?.value;
  return v?.kind === Kind.STRING ? v.value : undefined;
};

/**
 * The `@link` a (parsed) supergraph's schema makes to one spec, by URL prefix
 * (`https://specs.apollo.dev/cost/`), or undefined when it does not link it.
 */
export function specLink(doc: DocumentNode, spec: string): ConstDirectiveNode | undefined {
  for (const def of doc.definitions) {
    if (def.kind !== Kind.SCHEMA_DEFINITION && def.kind !== Kind.SCHEMA_EXTENSION) continue;
    for (const d of def.directives ?? []) {
      if (d.name.value === 'link' && stringArg(d, 'url')?.startsWith(spec)) return d;
    }
  }
  return undefined;
}
