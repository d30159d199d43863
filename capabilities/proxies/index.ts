/** The push transport to the proxies: admin client, channels, backoff and the push engine (fleet). */
export type { Result } from "../result";
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
