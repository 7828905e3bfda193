import { specLink } from '@halo/contracts/links';
import { ERROR_KINDS, type HaloError } from '@halo/kit/errors';
import {
  getNamedType,
  GraphQLError,
  Kind,
  parse,
  print,
  TypeInfo,
  visit,
  visitWithTypeInfo,
  type ConstDirectiveNode,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';

/** Which parts of the supergraph need a caller: `Type.field` coordinates and whole types. */
export interface AuthPolicy {
  fields: ReadonlySet<string>;
  types: ReadonlySet<string>;
}

const AUTHENTICATED_SPEC = 'https://specs.apollo.dev/authenticated/';
/** Enforced by every subgraph through the kit (kit/src/auth/scopes.ts), for API-key callers. */
const REQUIRES_SCOPES_SPEC = 'https://specs.apollo.dev/requiresScopes/';

const argValue = (d: ConstDirectiveNode, name: string) => {
  const arg = d.arguments?.find((a) => a.name.value === name);
  return arg?.value.kind === Kind.STRING || arg?.value.kind === Kind.ENUM ? arg.value.value : undefined;
};

/**
 * Reads the `@authenticated` policy out of a supergraph and returns an SDL @apollo/gateway will
 * load. The gateway refuses any `for: SECURITY` feature it does not itself enforce (Apollo Router
 * enforces this one; @apollo/gateway does not), so the `for: SECURITY` purpose is dropped from
 * the links Halo enforces itself: `@authenticated` here (src/graphql/operation-policy.ts),
 * `@requiresScopes` in the subgraphs (the kit, for API keys).
 */
export function prepareSupergraph(sdl: string): { sdl: string; policy: AuthPolicy } {
  const doc = parse(sdl);
  let linked = false;
  const withoutSecurityPurpose = visit(doc, {
    Directive(node) {
      if (node.name.value !== 'link') return undefined;
      const url = argValue(node as ConstDirectiveNode, 'url');
      if (!url?.startsWith(AUTHENTICATED_SPEC) && !url?.startsWith(REQUIRES_SCOPES_SPEC)) return undefined;
      linked = true;
      return { ...node, arguments: node.arguments?.filter((a) => a.name.value !== 'for') };
    },
  });
  return { sdl: linked ? print(withoutSecurityPurpose) : sdl, policy: readAuthPolicy(doc) };
}

/**
 * The `@authenticated` fields and types of a (parsed) supergraph, by the name its `@link` gives
 * the directive. Reads the prepared SDL as well as the original (only the link's purpose differs).
 */
export function readAuthPolicy(doc: DocumentNode): AuthPolicy {
  const link = specLink(doc, AUTHENTICATED_SPEC);
  const directive = link ? (argValue(link, 'as') ?? 'authenticated') : null;
  const fields = new Set<string>();
  const types = new Set<string>();
  if (directive === null) return { fields, types };
  const marked = (ds: readonly { name: { value: string } }[] | undefined) => ds?.some((d) => d.name.value === directive);
  for (const def of doc.definitions) {
    if (
      def.kind !== Kind.OBJECT_TYPE_DEFINITION &&
      def.kind !== Kind.OBJECT_TYPE_EXTENSION &&
      def.kind !== Kind.INTERFACE_TYPE_DEFINITION &&
      def.kind !== Kind.INTERFACE_TYPE_EXTENSION
    ) {
      continue;
    }
    if (marked(def.directives)) types.add(def.name.value);
    for (const f of def.fields ?? []) if (marked(f.directives)) fields.add(`${def.name.value}.${f.name.value}`);
  }
  return { fields, types };
}

/** True when the operation selects a field (or a type) that the policy reserves for callers. */
export function needsCaller(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  policy: AuthPolicy,
): boolean {
  if (policy.fields.size === 0 && policy.types.size === 0) return false;
  const typeInfo = new TypeInfo(schema);
  let found = false;
  const check = visitWithTypeInfo(typeInfo, {
    Field(node) {
      const parent = typeInfo.getParentType();
      const def = typeInfo.getFieldDef();
      if (!parent || !def) return undefined;
      if (
        policy.fields.has(`${parent.name}.${node.name.value}`) ||
        policy.types.has(parent.name) ||
        policy.types.has(getNamedType(def.type).name)
      ) {
        found = true;
        return false;
      }
      return undefined;
    },
  });
  // The operation itself, and every fragment it may spread (validation forbids unused ones).
  visit(operation, check);
  for (const def of document.definitions) if (!found && def.kind === Kind.FRAGMENT_DEFINITION) visit(def, check);
  return found;
}

/**
 * A HaloError as the GraphQL error that stops the whole request with its HTTP status (401 for
 * bad credentials, 503 when auth cannot be reached to check an API key).
 */
export function toTransportError(err: HaloError): GraphQLError {
  return new GraphQLError(err.message, {
    extensions: { code: ERROR_KINDS[err.kind].graphql, http: { status: err.httpStatus } },
  });
}
