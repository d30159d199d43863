/** The proxy admin channel: certificates, management config, admin client and push engine. */
export type { Result } from "../result";
export { SecretPem } from "../pki/secret";
export {
  CA_LIFETIME_DAYS,
  CLOCK_SKEW_MS,
  createAuthority,
  generateKeyPair,
  issueClientCertificate,
  issueServerCertificate,
  LEAF_LIFETIME_DAYS,
  loadAuthority,
  pemToBase64Der,
  proxyServerName,
  proxyServerNames,
  renewalDue,
} from "../pki/pki";
export type { Authority, Issued, KeyPair, RandomBytes, Validity } from "../pki/pki";
export {
  ADMIN_SOCKET_HOST,
  adminAddressProblem,
  adminBlock,
  bootstrapConfig,
  checkConfig,
  checkSpec,
  CONFIG_ID_PREFIX,
  configHash,
  DEFAULT_CERT_TAG,
  isSealed,
  MAX_SOCKET_PATH_BYTES,
  MANAGEMENT_SERVER,
  managementCertificateLoader,
  managementServer,
  READINESS_PATH,
  READINESS_SERVER,
  DEFAULT_SEAL_OPTIONS,
  TRAFFIC_METRICS,
  readinessServer,
  sealBuilt,
  sealConfig,
  withManagement,
} from "./management";
export type { CaddyConfig, PlainConfig } from "../caddy/types";
export type {
  ManagementSpec,
  SealedConfig,
  SealOptions,
  ServerCertificateSource,
  TrafficMetricsMode,
} from "./management";
export { configJSON, configText } from "./route-tables";
export type { ConfigText } from "./route-tables";
export { AdminClient, describeAdminError, VALIDATE_PATH } from "./admin-client";
export type {
  AdminClientOptions,
  AdminError,
  ClientCredentials,
  ConfigRead,
  PeerCertificate,
  ProxyEndpoint,
  Validation,
} from "./admin-client";
export { backoffDelay, DEFAULT_BACKOFF, ManualClock, systemClock } from "./backoff";
export type { BackoffPolicy, Clock } from "./backoff";
export { AdminChannels, channelKey } from "./channels";
export { parsePrometheusText } from "./prom-text";
export type { Sample } from "./prom-text";
export { Fleet } from "./fleet";
export type { AdminApi, Applied, FleetEvent, FleetOptions, ProxyState, Target } from "./fleet";
