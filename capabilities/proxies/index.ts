/** The push transport to the proxies: admin client, channels, backoff and the push engine (fleet). */
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
// Sealing and the management channel live in caddy/ (seal.ts, management.ts, config-text.ts);
// re-exported here for the importers of this room's index.
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
} from "../caddy/management";
export type { ManagementSpec, ServerCertificateSource } from "../caddy/management";
export {
  configHash,
  DEFAULT_SEAL_OPTIONS,
  isSealed,
  sealBuilt,
  sealConfig,
  TRAFFIC_METRICS,
} from "../caddy/seal";
export type { SealedConfig, SealOptions, TrafficMetricsMode } from "../caddy/seal";
export type { CaddyConfig, PlainConfig } from "../caddy/types";
export { configJSON, configText } from "../caddy/config-text";
export type { ConfigText } from "../caddy/config-text";
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
