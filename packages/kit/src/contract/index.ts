/** What a service publishes to the registry (its contract), the publish call and the headers; the registry's wire shapes are @halo/contracts/wire's. */
export {
  GATEWAY_ID_HEADER,
  publishContract,
  PublishError,
  type PublishResult,
  SERVICE_TOKEN_HEADER,
  serviceContract,
  type ServiceContract,
} from './contract';
