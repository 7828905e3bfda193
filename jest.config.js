// One Jest run for the whole monorepo. Tests run from TypeScript sources through SWC (no type
// checking here; `npm run build` type-checks). ESM-only dependencies are transformed to CommonJS.
const ESM_ONLY = ['jose', 'openid-client', 'oauth4webapi', 'graphql-ws'];
// oidc-provider 8 (the dev OpenID provider, tools/src/dev-oidc.ts) and the ESM-only packages it loads.
const OIDC_PROVIDER_ESM = [
  'oidc-provider',
  'quick-lru',
  'nanoid',
  'got',
  '@sindresorhus/is',
  'p-cancelable',
  '@szmarczak/http-timer',
  'cacheable-request',
  'normalize-url',
  'responselike',
  'lowercase-keys',
  'mimic-response',
  'form-data-encoder',
  'cacheable-lookup',
];

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: [
    '<rootDir>/packages',
    '<rootDir>/services',
    '<rootDir>/gateway',
    '<rootDir>/tools',
    '<rootDir>/e2e',
    '<rootDir>/helm',
    '<rootDir>/loadtest',
    '<rootDir>/deploy',
  ],
  testMatch: ['**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  transform: {
    '^.+\\.(c?js|tsx?)$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: [`/node_modules/(?!(${[...ESM_ONLY, ...OIDC_PROVIDER_ESM].join('|')})/)`],
  moduleNameMapper: {
    // Each of the kit's entry points is its folder's index (packages/kit/package.json `exports`).
    '^@halo/kit/([a-z-]+)$': '<rootDir>/packages/kit/src/$1/index.ts',
    '^@halo/proto$': '<rootDir>/packages/proto/src/index.ts',
    '^@halo/client$': '<rootDir>/packages/client/src/index.ts',
    '^@halo/client/sse$': '<rootDir>/packages/client/src/sse.ts',
    '^@halo/contracts$': '<rootDir>/packages/contracts/src/index.ts',
    '^@halo/contracts/cost$': '<rootDir>/packages/contracts/src/cost.ts',
    '^@halo/contracts/links$': '<rootDir>/packages/contracts/src/links.ts',
    '^@halo/contracts/coordinates$': '<rootDir>/packages/contracts/src/coordinates.ts',
    '^@halo/contracts/wire$': '<rootDir>/packages/contracts/src/wire.ts',
    // @halo/client's sources import each other as `./x.js` (the specifier its ESM build needs in
    // Node); Jest runs the `.ts` beside it. `./x` resolves to x.js first wherever x.js exists.
    '^(\\.{1,2}/.+)\\.js$': '$1',
  },
  // PostgreSQL and Redis for the run: the machine's, or started for it (tools/jest/test-servers.ts).
  globalSetup: '<rootDir>/tools/jest/global-setup.ts',
  globalTeardown: '<rootDir>/tools/jest/global-teardown.ts',
  testTimeout: 30_000,
  maxWorkers: 2,
  // A file that stops making progress ends the run naming it, instead of hanging it (docs/testing.md).
  reporters: ['default', '<rootDir>/tools/jest/watchdog-reporter.js'],
};
