/** What a service publishes to the registry (its contract), the publish call and the usage report. */
export {
  GATEWAY_ID_HEADER,
  publishContract,
  PublishError,
  type PublishResult,
  SERVICE_TOKEN_HEADER,
  serviceContract,
  type ServiceContract,
  type UsageReport,
} from './contract';
