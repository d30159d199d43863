import { readFileSync } from "node:fs";

/**
 * Tests that run a golden or generated config on a local Caddy move its listeners to
 * LISTENER_PORT_OFFSET + port (port 80 → 20080). The offset keeps every moved port (the
 * goldens use 53–9999) below the kernel's ephemeral range: a port inside that range can be
 * the source port of any outgoing connection on the machine (a watch on the API server, a
 * client of the admin API), and then Caddy's bind fails with "address already in use". That
 * happened in CI with the older offset of 41000.
 */
export const LISTENER_PORT_OFFSET = 20_000;

/** The highest port a test config listens on before the offset is added. */
export const HIGHEST_CONFIG_PORT = 12_767;

/** The kernel's ephemeral port range [low, high] (Linux defaults when unreadable). */
export function ephemeralPortRange(
  read: () => string = () => readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8"),
): [number, number] {
  try {
    const [low, high] = read().trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high)) return [low, high];
  } catch {
    // not Linux, or /proc not mounted
  }
  return [32768, 60999];
}

/**
 * LISTENER_PORT_OFFSET, after checking that no moved port can fall in the ephemeral range;
 * throws naming the kernel setting when it can.
 */
export function listenerPortOffset(range = ephemeralPortRange()): number {
  const lowest = LISTENER_PORT_OFFSET;
  const highest = LISTENER_PORT_OFFSET + HIGHEST_CONFIG_PORT;
  if (highest >= range[0] && lowest <= range[1])
    throw new Error(
      `test listeners use ports ${lowest}-${highest}, which overlap the ephemeral range ` +
        `${range[0]}-${range[1]} (net.ipv4.ip_local_port_range); outgoing connections could take them`,
    );
  return LISTENER_PORT_OFFSET;
}
