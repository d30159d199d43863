/**
 * Ports of a managed proxy pod that are not the Gateway's to use: the pod spec listens on them
 * and validation refuses a listener on any of them (one list for both).
 */

/** Management listener on the pod IP (the Service port named `admin`, docs/proxies.md). */
export const DEFAULT_MANAGEMENT_PORT = 19443;
/** Readiness listener, present only once the controller's config is loaded. */
export const DEFAULT_READINESS_PORT = 19080;
/**
 * Caddy's default admin port. No config of ours listens on it (the admin is on ADMIN_SOCKET),
 * but a Caddy started without an admin block does, and so do bring-your-own proxies bootstrapped
 * from templates older than the socket until their first push: a Gateway listener there would
 * fail to bind on them, so it stays reserved.
 */
export const CADDY_DEFAULT_ADMIN_PORT = 2019;
/** Ports a Gateway listener cannot use on our proxies (the translator reports such listeners). */
export const RESERVED_PORTS: readonly number[] = [
  CADDY_DEFAULT_ADMIN_PORT,
  DEFAULT_MANAGEMENT_PORT,
  DEFAULT_READINESS_PORT,
];
