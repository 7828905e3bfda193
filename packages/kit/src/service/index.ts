/** `defineService`: the one way a service starts (config, db, HTTP, GraphQL, gRPC, REST, lifecycle). */
export { defineService } from './define-service';
export { type DefinedService, type RunningService, type ServiceDefinition, type ServiceParts } from './definition';
export { type PeerClient, type PeerClients, type PeerDefinition, type PeerDefinitions } from './peers';
export {
  type KitConfig,
  kitConfigShape,
  loadPublishConfig,
  loadServiceConfig,
  type PublishConfig,
  publishConfigShape,
  publishOnlyRequested,
  type ServiceConfig,
} from './service-config';
export {
  createHttpApp,
  finishHttpApp,
  openServiceDb,
  serveHttp,
  serveService,
  type ServiceRuntimeConfig,
  type StartedService,
  startSubgraph,
  subgraphContext,
  subgraphMiddleware,
  type SubgraphSubscriptions,
  withLifecycle,
} from './service';
