export {
  toCaddyConfig,
  caddySourceMap,
  listenerSource,
  renderCaddyJSON,
  escapePlaceholders,
  celString,
  celPlaceholder,
  ERROR_SERVER_NAME,
  WILDCARD_SNI_DEPTH,
} from "./config";
export type { CaddyOptions, CaddySourceMap, SourceObject } from "./config";
export * from "./types";
export {
  ADMIN_SOCKET_HOST,
  adminAddressProblem,
  adminBlock,
  bootstrapConfig,
  checkConfig,
  checkSpec,
  CONFIG_ID_PREFIX,
  DEFAULT_CERT_TAG,
  MAX_SOCKET_PATH_BYTES,
  MANAGEMENT_SERVER,
  managementCertificateLoader,
  managementServer,
  READINESS_PATH,
  READINESS_SERVER,
  readinessServer,
  withManagement,
} from "./management";
export type { ManagementSpec, ServerCertificateSource } from "./management";
export {
  configHash,
  DEFAULT_SEAL_OPTIONS,
  isSealed,
  sealBuilt,
  sealConfig,
  TRAFFIC_METRICS,
} from "./seal";
export type { SealedConfig, SealOptions, TrafficMetricsMode } from "./seal";
export { configJSON, configText } from "./config-text";
export type { ConfigText } from "./config-text";
