/** The proxy admin channel: certificates, management config, admin client and push engine. */
export type { Result } from "./result";
export { SecretPem } from "./secret";
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
} from "./pki";
export type { Authority, Issued, KeyPair, RandomBytes, Validity } from "./pki";
export {
  adminBlock,
  bootstrapConfig,
  checkConfig,
  checkSpec,
  CONFIG_ID_PREFIX,
  configHash,
  DEFAULT_CERT_TAG,
  isSealed,
  MANAGEMENT_SERVER,
  managementCertificateLoader,
  managementServer,
  READINESS_PATH,
  READINESS_SERVER,
  readinessServer,
  sealConfig,
  withManagement,
} from "./management";
export type { CaddyConfig, ManagementSpec, SealedConfig, ServerCertificateSource } from "./management";
export { AdminClient, describeAdminError } from "./admin-client";
export type { AdminClientOptions, AdminError, ClientCredentials, ConfigRead, ProxyEndpoint } from "./admin-client";
export { backoffDelay, DEFAULT_BACKOFF, ManualClock, systemClock } from "./backoff";
export type { BackoffPolicy, Clock } from "./backoff";
export { Fleet } from "./fleet";
export type { AdminApi, Applied, FleetEvent, FleetOptions, ProxyState, Target } from "./fleet";
