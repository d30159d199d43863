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
  bootstrapConfig,
  checkConfig,
  managementCertificateLoader,
  managementServer,
  withManagement,
} from "./management";
export type { ManagementSpec, ServerCertificateSource } from "./management";
export { configHash, isSealed, sealBuilt, sealConfig } from "./seal";
export type { SealedConfig, SealOptions, TrafficMetricsMode } from "./seal";
export { configJSON, configText } from "./config-text";
export type { ConfigText } from "./config-text";
