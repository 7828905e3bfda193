import { renderValuesReference, type SchemaObject } from './values-reference';

/** The page's table as path → [type, default, allowed, description] (cells unescaped). */
function table(page: string): Record<string, string[]> {
  const rows = page.split('\n').filter((l) => l.startsWith('| `'));
  return Object.fromEntries(
    rows.map((row) => {
      const cells = row
        .slice(2, -2)
        .split(/ (?<!\\)\| /)
        .map((c) => c.trim().replace(/\\\|/g, '|'));
      return [cells[0]!.slice(1, -1), cells.slice(1)];
    }),
  );
}

const schema: SchemaObject = {
  title: 'Values of a small chart',
  description: 'Checked by Helm.',
  type: 'object',
  required: ['app'],
  allOf: [{ description: 'tls needs a host.', if: { properties: { tls: { const: true } } }, then: { required: ['host'] } }],
  properties: {
    app: {
      type: 'object',
      required: ['port'],
      properties: {
        port: { description: 'Where it listens.', $ref: '#/definitions/port' },
        mode: { enum: ['a|b', 'c', true] },
        probes: { type: 'object', properties: { live: { $ref: '#/definitions/probe' }, ready: { $ref: '#/definitions/probe' } } },
      },
    },
    env: {
      description: 'Variables.',
      type: 'object',
      propertyNames: { $ref: '#/definitions/envName' },
      additionalProperties: { anyOf: [{ type: 'string' }, { type: 'null' }] },
    },
    hosts: { type: 'array', minItems: 1, items: { type: 'string', pattern: '^[a-z.]+$' } },
    labels: { type: 'object', additionalProperties: { type: 'string' } },
    secret: { type: 'string', anyOf: [{ maxLength: 0 }, { minLength: 32 }] },
    kind: { const: 'OKP' },
    d: false,
    timeout: { type: 'integer', exclusiveMinimum: 0, default: 30 },
  },
  definitions: {
    port: { type: 'integer', minimum: 1, maximum: 65535 },
    envName: { type: 'string', pattern: '^[A-Z_]+$' },
    probe: { description: 'Probe timing.', type: 'object', properties: { period: { type: 'integer', minimum: 1 } } },
  },
};

const values = {
  app: { port: 8080, mode: 'c', probes: { live: { period: 10 }, ready: { period: 5 } } },
  env: { LOG_LEVEL: 'info' },
  hosts: ['a.example'],
  labels: {},
  secret: '',
};

describe('renderValuesReference', () => {
  const page = renderValuesReference(schema, values);

  it('writes a row per value path: type, default, allowed and description', () => {
    expect(table(page)).toEqual({
      app: ['object', '', 'required', ''],
      'app.port': ['integer', '`8080`', 'required; 1–65535', 'Where it listens.'],
      'app.mode': ['string or boolean', '`c`', 'one of `a|b`, `c`, `true`', ''],
      'app.probes': ['object', '', '', ''],
      'app.probes.live': ['object', '', '', 'Probe timing.'],
      'app.probes.live.period': ['integer', '`10`', '≥ 1', ''],
      'app.probes.ready': ['object', '`{"period":5}`', '', 'Probe timing. As under `app.probes.live` (probe).'],
      env: ['map', '', '', 'Variables.'],
      'env.<envName>': ['string or null', '', 'key: pattern `^[A-Z_]+$`; any of: string / null', ''],
      'env.LOG_LEVEL': ['string or null', '`info`', 'any of: string / null', ''],
      hosts: ['array', '`["a.example"]`', 'items ≥ 1', ''],
      'hosts[]': ['string', '', 'pattern `^[a-z.]+$`', ''],
      labels: ['map of string', '`{}`', '', ''],
      secret: ['string', '`""`', 'any of: empty / length ≥ 32', ''],
      kind: ['string', '', 'only `OKP`', ''],
      d: ['never', '', 'must not be set', ''],
      timeout: ['integer', '`30`', '> 0', ''],
    });
  });

  it('heads the page with the title, a generated-file note, the description and the rules across values', () => {
    const head = page.slice(0, page.indexOf('| value |'));
    expect(head).toMatch(/^# Values of a small chart\n/);
    expect(head).toContain('npm run helm:docs');
    expect(head).toContain('Checked by Helm.');
    expect(head).toContain('Across values:\n\n- tls needs a host.\n');
  });

  it("escapes a pipe inside a cell, so a pattern's alternatives do not split the table", () => {
    expect(page).toContain('one of `a\\|b`, `c`, `true`');
    for (const row of page.split('\n').filter((l) => l.startsWith('| `'))) {
      expect(row.split(/ (?<!\\)\| /)).toHaveLength(5);
    }
  });

  it('names a $ref that points nowhere', () => {
    expect(() => renderValuesReference({ properties: { x: { $ref: '#/definitions/missing' } } }, {})).toThrow(
      '#/definitions/missing points nowhere',
    );
  });
});
