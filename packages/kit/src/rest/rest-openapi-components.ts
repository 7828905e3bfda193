/**
 * The shared parts of the composed OpenAPI document (rest-openapi.ts): the components operations
 * point to, for the headers every client must send or read (README "Limits", docs/api/conventions.md).
 */

type JsonObject = Record<string, unknown>;

export const ERROR_REF = { $ref: '#/components/schemas/Error' };

const RATE_LIMIT_DRAFT = 'draft-ietf-httpapi-ratelimit-headers-10';

const headers: Record<string, JsonObject> = {
  Deprecation: { description: 'This version of the route is deprecated', schema: { type: 'string', const: 'true' } },
  RateLimit: {
    description:
      `What is left of each rate-limit policy that applies (${RATE_LIMIT_DRAFT}): \`"<policy>";r=<remaining>;t=<seconds until reset>\`, ` +
      'comma-separated. Absent when the gateway runs without limits.',
    schema: { type: 'string', examples: ['"authenticated";r=1187;t=41'] },
  },
  'RateLimit-Policy': {
    description: `The rate-limit policies that apply (${RATE_LIMIT_DRAFT}): \`"<policy>";q=<quota>;w=<window seconds>\`, comma-separated.`,
    schema: { type: 'string', examples: ['"authenticated";q=1200;w=60'] },
  },
  'Retry-After': {
    description: 'Seconds to wait before retrying (at least 1)',
    required: true,
    schema: { type: 'integer', minimum: 1 },
  },
  'Retry-After-Optional': {
    description: 'Seconds to wait before retrying (at least 1), when the server knows',
    schema: { type: 'integer', minimum: 1 },
  },
  'X-Request-Id': {
    description:
      "The request's id, on every answer: the client's own `X-Request-Id` when it was sane (1-128 letters, digits, " +
      '`_`, `.`, `:`, `-`), else one the gateway made. Every service logs it; quote it when reporting a problem.',
    required: true,
    schema: { type: 'string', minLength: 1, maxLength: 128 },
  },
  'Idempotent-Replayed': {
    description: '`true` on an answer replayed for a repeated `Idempotency-Key` (nothing was done again)',
    schema: { type: 'string', const: 'true' },
  },
};

const parameters: Record<string, JsonObject> = {
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    required: true,
    description:
      'A key the client picks per operation (e.g. a UUID v4), scoped to the caller: a retry with the same key and request ' +
      'answers the first answer again. Sent once.',
    schema: { type: 'string', minLength: 1, maxLength: 255 },
  },
};

const responses: Record<string, JsonObject> = {
  TooManyRequests: {
    description: '`Too many requests`: the caller\'s rate limit (README "Limits"); retry after `Retry-After` seconds',
    headers: {
      'Retry-After': { $ref: '#/components/headers/Retry-After' },
      RateLimit: { $ref: '#/components/headers/RateLimit' },
      'RateLimit-Policy': { $ref: '#/components/headers/RateLimit-Policy' },
      'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
    },
    content: { 'application/json': { schema: ERROR_REF } },
  },
};

const schemas: Record<string, JsonObject> = {
  Error: {
    type: 'object',
    description: 'Every error: one message, naming the field for a validation error',
    properties: { error: { type: 'string' } },
    required: ['error'],
  },
};

const securitySchemes = {
  bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'An access token from `POST /auth/login`' },
  apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'A server-to-server key from `POST /auth/api-keys`' },
};

/** The components the paths point to, and no other (an unused one would only mislead). */
export function usedComponents(paths: unknown): JsonObject {
  let text = JSON.stringify(paths);
  const pick = (kind: string, all: Record<string, JsonObject>) => {
    const used = Object.entries(all).filter(([name]) => text.includes(`"#/components/${kind}/${name}"`));
    return used.length > 0 ? { [kind]: Object.fromEntries(used) } : {};
  };
  // Components point to others (TooManyRequests to its headers): resolve those first.
  const picked = pick('responses', responses);
  text += JSON.stringify(picked);
  return {
    ...pick('schemas', schemas),
    ...picked,
    ...pick('parameters', parameters),
    ...pick('headers', headers),
    securitySchemes,
  };
}
