import { readFileSync } from "node:fs";
import { createServer } from "node:net";

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

/** Throws, naming the kernel setting, when ports [low, high] overlap the ephemeral range. */
function checkOutsideEphemeral(what: string, low: number, high: number, range: [number, number]) {
  if (high >= range[0] && low <= range[1])
    throw new Error(
      `${what} use ports ${low}-${high}, which overlap the ephemeral range ` +
        `${range[0]}-${range[1]} (net.ipv4.ip_local_port_range); outgoing connections could take them`,
    );
}

/**
 * LISTENER_PORT_OFFSET, after checking that no moved port can fall in the ephemeral range;
 * throws naming the kernel setting when it can.
 */
export function listenerPortOffset(range = ephemeralPortRange()): number {
  const highest = LISTENER_PORT_OFFSET + HIGHEST_CONFIG_PORT;
  checkOutsideEphemeral("test listeners", LISTENER_PORT_OFFSET, highest, range);
  return LISTENER_PORT_OFFSET;
}

/**
 * Ports handed out by freePort: below LISTENER_PORT_OFFSET and above every well-known port the
 * cluster scripts use, and, like the moved listeners, outside the ephemeral range.
 */
export const FREE_PORT_RANGE: readonly [number, number] = [13_000, 18_999];

const handedOut = new Set<number>();
let cursor = -1;

function bindable(port: number, host: string): Promise<boolean> {
  return new Promise(resolve => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(port, host, () => s.close(() => resolve(true)));
  });
}

/**
 * A TCP port that was free on `host` a moment ago and that this process has not handed out
 * before. Not from the kernel (listen on port 0): such a port lies in the ephemeral range, and a
 * process that binds it later (Caddy on /load, a restarted proxy) finds it taken by the source
 * port of some outgoing connection, as in CI.
 */
export async function freePort(host = "127.0.0.1", range = ephemeralPortRange()): Promise<number> {
  const [low, high] = FREE_PORT_RANGE;
  checkOutsideEphemeral("ports from freePort", low, high, range);
  const size = high - low + 1;
  // a random start keeps separate test processes apart; the cursor keeps this one's ports distinct
  if (cursor < 0) cursor = Math.floor(Math.random() * size);
  for (let i = 0; i < size; i++) {
    const port = low + ((cursor + i) % size);
    if (handedOut.has(port) || !(await bindable(port, host))) continue;
    cursor = (cursor + i + 1) % size;
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free port on ${host} in ${low}-${high}`);
}
