import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { defaultFieldResolver, isObjectType, type GraphQLFieldResolver, type GraphQLSchema } from 'graphql';
import { badRequest, type HaloError } from '../errors/errors';

/**
 * The NUL rule, one for every transport: PostgreSQL cannot store U+0000 in text, so a string
 * input holding one would fail at the database as a 500. It is refused at the boundary instead,
 * naming the field: REST 400 `{"error": "<field> must not contain NUL characters"}`, GraphQL
 * `BAD_USER_INPUT` on the field whose argument holds it, gRPC `INVALID_ARGUMENT`
 * (docs/api/conventions.md). The services' own rules never see such a value.
 */

/**
 * How deep an input is inspected. GraphQL variables are capped at this depth by the gateway
 * (VARIABLES_TOO_DEEP), GraphQL and gRPC inputs are bounded by their schemas, and a REST body this
 * deep fails its route's schema anyway; the cap keeps the walk's recursion bounded whatever comes.
 */
export const NUL_CHECK_DEPTH = 64;

export const nulMessage = (field: string) => `${field} must not contain NUL characters`;

/** Only arrays and plain objects are walked: a Buffer, Date or class instance is not client text. */
const isPlain = (value: object) => {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
};

/** True when a string in `value` (a value or an object key) holds U+0000. Allocates nothing. */
function holdsNul(value: unknown, depth: number): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (typeof value !== 'object' || value === null || depth >= NUL_CHECK_DEPTH) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (holdsNul(value[i], depth + 1)) return true;
    return false;
  }
  if (!isPlain(value)) return false;
  for (const key in value) {
    if (key.includes('\u0000') || holdsNul((value as Record<string, unknown>)[key], depth + 1)) return true;
  }
  return false;
}

/** The dotted path of the first NUL below `value` (called only once one is known to be there). */
function nulPathBelow(value: unknown, path: string, depth: number): string {
  if (typeof value !== 'object' || value === null) return path;
  if (Array.isArray(value)) {
    const i = value.findIndex((v) => holdsNul(v, depth + 1));
    return nulPathBelow(value[i], path ? `${path}.${i}` : String(i), depth + 1);
  }
  for (const key in value) {
    // A key holding NUL is reported as its object: the key itself is not printable.
    if (key.includes('\u0000')) return path;
    const child = (value as Record<string, unknown>)[key];
    if (holdsNul(child, depth + 1)) return nulPathBelow(child, path ? `${path}.${key}` : key, depth + 1);
  }
  return path;
}

/**
 * The field (`name`, `input.name`, `scopes.1`) of the first string in `fields` that holds a NUL
 * character, or null. `fields` is an object of named inputs (a body, a query, GraphQL arguments, a
 * gRPC message); `whole` names the input itself when the NUL is in one of its keys or it is not an
 * object. The happy path is one walk that allocates nothing.
 */
export function findNul(fields: unknown, whole = 'body'): string | null {
  if (!holdsNul(fields, 0)) return null;
  return nulPathBelow(fields, '', 0) || whole;
}

/** Throws the contract's 400 (a HaloError) when an input holds a NUL character. */
export function refuseNul(fields: unknown, whole = 'body'): void {
  const field = findNul(fields, whole);
  if (field !== null) throw nulError(field);
}

export const nulError = (field: string): HaloError => badRequest(nulMessage(field));

/** Percent-encoded NUL in a URL: `%00`. A raw U+0000 never gets past Node's HTTP parser. */
const ENCODED_NUL = /%00/;
/** A NUL in a JSON text is always this escape (RFC 8259 allows no raw control characters). */
const JSON_NUL_ESCAPE = '\\u0000';

/**
 * REST: the query string and the JSON body. Both are looked at only when their raw text could hold
 * a NUL (a `%00` in the URL, a `\u0000` escape in the body: `jsonBody` marks it), so most requests
 * cost one substring search each. Path parameters are named by the route: the kit's `route()`.
 */
export function refuseNulInput(): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction) => {
    const url = req.originalUrl;
    const q = url.indexOf('?');
    if (q !== -1 && ENCODED_NUL.test(url.slice(q))) {
      const field = findNul(req.query, 'query');
      if (field !== null) return next(nulError(field));
    }
    if ((req as { [BODY_MAY_HOLD_NUL]?: boolean })[BODY_MAY_HOLD_NUL]) {
      const field = findNul(req.body, 'body');
      if (field !== null) return next(nulError(field));
    }
    next();
  };
}

/** Set by the kit's JSON body parser when the raw body holds the `\u0000` escape. */
export const BODY_MAY_HOLD_NUL = Symbol('halo.bodyMayHoldNul');

/** For the JSON parser's `verify`: does this raw body contain a `\u0000` escape? */
export const rawJsonMayHoldNul = (raw: Buffer) => raw.includes(JSON_NUL_ESCAPE);

/**
 * GraphQL: every field with arguments (and every subscription field) of a subgraph's schema checks
 * them before its resolver runs; a NUL answers that field `BAD_USER_INPUT` naming the argument,
 * the rest of the operation runs as usual. Changes the schema's fields in place, so the HTTP and
 * WebSocket servers built from the same schema both get it; fields without arguments are left alone.
 */
export function refuseNulArguments(schema: GraphQLSchema): GraphQLSchema {
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) {
      if (field.args.length === 0) continue;
      field.resolve = guarded(field.resolve ?? defaultFieldResolver);
      if (field.subscribe) field.subscribe = guarded(field.subscribe);
    }
  }
  return schema;
}

function guarded<S, C>(resolver: GraphQLFieldResolver<S, C>): GraphQLFieldResolver<S, C> {
  return (source, args, context, info) => {
    refuseNul(args, info.fieldName);
    return resolver(source, args, context, info);
  };
}
