export * from './contract';
export * from './compose';
export * from './changes';
export * from './usage';
export * from './takeovers';
export * from './operations';
export * from './cost';
export * from './links';
/** The registry's HTTP answers (also the light entry `@halo/contracts/wire`). */
export * as wire from './wire';
