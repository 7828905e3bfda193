export * from './contract';
export * from './compose';
export * from './changes';
export * from './usage';
export * from './takeovers';
export * from './operations';
export * from './cost';
export * from './links';
