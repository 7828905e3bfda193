import {
  defaultFieldResolver,
  getNamedType,
  isCompositeType,
  isObjectType,
  Kind,
  type DirectiveNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLResolveInfo,
  type GraphQLSchema,
} from 'graphql';

/**
 * `Cache-Control` for the lean path, as @apollo/server/plugin/cacheControl computes it: every
 * field resolved restricts the policy by its type's and its own `@cacheControl` hints; any error
 * means `no-store`.
 */
const CACHE_POLICY = Symbol('halo.leanCachePolicy');

interface CacheHint {
  maxAge?: number | undefined;
  scope?: 'PUBLIC' | 'PRIVATE' | undefined;
  inheritMaxAge?: boolean;
}

/**
 * Apollo's `CachePolicy` (cachePolicy.ts): what `info.cacheControl.cacheHint` is to a resolver,
 * and what an operation's answer may be cached for (the gateway's lean path restricts one by each
 * subgraph's Cache-Control, as Apollo Server's does).
 */
export class CachePolicy {
  maxAge: number | undefined = undefined;
  scope: 'PUBLIC' | 'PRIVATE' | undefined = undefined;

  restrict(hint: CacheHint): void {
    if (hint.maxAge !== undefined && (this.maxAge === undefined || hint.maxAge < this.maxAge)) this.maxAge = hint.maxAge;
    if (hint.scope !== undefined && this.scope !== 'PRIVATE') this.scope = hint.scope;
  }

  replace(hint: CacheHint): void {
    if (hint.maxAge !== undefined) this.maxAge = hint.maxAge;
    if (hint.scope !== undefined) this.scope = hint.scope;
  }

  policyIfCacheable(): { maxAge: number; scope: 'PUBLIC' | 'PRIVATE' } | null {
    if (this.maxAge === undefined || this.maxAge === 0) return null;
    return { maxAge: this.maxAge, scope: this.scope ?? 'PUBLIC' };
  }
}

/** One request's hints: every field resolution's policy, folded into one when execution is over. */
export class RequestCachePolicy {
  private readonly fields: { policy: CachePolicy; restrictToDefault: boolean }[] = [];

  add(policy: CachePolicy, restrictToDefault: boolean): void {
    this.fields.push({ policy, restrictToDefault });
  }

  /** The plugin's end-of-field step (maxAge 0 where nothing set one), then `overallCachePolicy`. */
  overall(): CachePolicy {
    const overall = new CachePolicy();
    for (const { policy, restrictToDefault } of this.fields) {
      if (restrictToDefault && policy.maxAge === undefined) policy.restrict({ maxAge: 0 });
      overall.restrict(policy);
    }
    return overall;
  }
}

function hintFromDirectives(directives: readonly DirectiveNode[] | undefined): CacheHint | undefined {
  const directive = directives?.find((d) => d.name.value === 'cacheControl');
  if (!directive?.arguments) return undefined;
  const arg = (name: string) => directive.arguments!.find((a) => a.name.value === name)?.value;
  const scopeValue = arg('scope');
  const scopeString = scopeValue?.kind === Kind.ENUM ? scopeValue.value : undefined;
  const scope = scopeString === 'PUBLIC' || scopeString === 'PRIVATE' ? scopeString : undefined;
  const inherit = arg('inheritMaxAge');
  if (inherit?.kind === Kind.BOOLEAN && inherit.value) return { inheritMaxAge: true, scope };
  const maxAge = arg('maxAge');
  return { maxAge: maxAge?.kind === Kind.INT ? parseInt(maxAge.value) : undefined, scope };
}

function hintFromType(t: GraphQLCompositeType): CacheHint {
  const own = hintFromDirectives(t.astNode?.directives);
  if (own) return own;
  for (const node of t.extensionASTNodes) {
    const hint = hintFromDirectives(node.directives);
    if (hint) return hint;
  }
  return {};
}

/**
 * Every field of the schema's object types reports its cache hint to the lean path's policy when
 * the context carries one (Apollo's own instrumentation does the same for its plugin, keyed by
 * its own symbol): the field's hint computed once, the restriction applied per resolution.
 */
export function instrumentCacheHints(schema: GraphQLSchema): void {
  const typeHints = new Map<GraphQLCompositeType, CacheHint>();
  const typeHint = (t: GraphQLCompositeType) => {
    let hint = typeHints.get(t);
    if (hint === undefined) typeHints.set(t, (hint = hintFromType(t)));
    return hint;
  };
  for (const type of Object.values(schema.getTypeMap())) {
    if (type.name.startsWith('__') || !isObjectType(type)) continue;
    for (const field of Object.values(type.getFields())) wrapField(field, typeHint);
  }
}

function wrapField(field: GraphQLField<unknown, unknown>, typeHint: (t: GraphQLCompositeType) => CacheHint): void {
  const original = field.resolve ?? defaultFieldResolver;
  const fieldHint = hintFromDirectives(field.astNode?.directives) ?? {};
  const targetType = getNamedType(field.type);
  const composite = isCompositeType(targetType);
  field.resolve = (source: unknown, args: Record<string, unknown>, contextValue: unknown, info: GraphQLResolveInfo) => {
    const request = (contextValue as { [CACHE_POLICY]?: RequestCachePolicy } | null | undefined)?.[CACHE_POLICY];
    if (request !== undefined) {
      // The plugin's willResolveField: the type's hint, then the field's (inheritMaxAge aside).
      const policy = new CachePolicy();
      let inheritMaxAge = false;
      if (composite) {
        const annotation = typeHint(targetType);
        policy.replace(annotation);
        inheritMaxAge = !!annotation.inheritMaxAge;
      }
      if (fieldHint.inheritMaxAge && policy.maxAge === undefined) {
        inheritMaxAge = true;
        if (fieldHint.scope) policy.replace({ scope: fieldHint.scope });
      } else {
        policy.replace(fieldHint);
      }
      (info as { cacheControl?: unknown }).cacheControl = {
        setCacheHint: (hint: CacheHint) => policy.replace(hint),
        cacheHint: policy,
        cacheHintFromType: typeHint,
      };
      request.add(policy, (composite && !inheritMaxAge) || !info.path.prev);
    }
    return original(source, args, contextValue, info);
  };
}

/** A fresh policy for one request, carried by its context where the instrumented fields find it. */
export function attachCachePolicy(contextValue: object): RequestCachePolicy {
  const hints = new RequestCachePolicy();
  Object.defineProperty(contextValue, CACHE_POLICY, { value: hints });
  return hints;
}

/** The answer's `Cache-Control`: the request's overall policy when it may be cached, else `no-store`. */
export function cacheControlHeader(hints: RequestCachePolicy): string {
  const cacheable = hints.overall().policyIfCacheable();
  return cacheable ? `max-age=${cacheable.maxAge}, ${cacheable.scope.toLowerCase()}` : 'no-store';
}
