/**
 * Pod networking: a host bridge kg-br0 (10.244.0.1/24) and, per pod, a network namespace
 * kg-<hash> joined to the bridge by a veth pair. Every name starts with "kg-" so
 * hack/kubelet/cleanup.sh can find what is left after a crash. No forwarding or NAT is set up:
 * pod traffic stays on the bridge.
 */
import { createHash } from "node:crypto";
import { run } from "./exec";
import { bridgeIP, podPrefixLength } from "./ipam";

export const bridgeName = "kg-br0";
/**
 * Policy-routing table and rule priority that make every packet arriving from the pods on
 * kg-br0 unroutable unless it is for the host itself (the local table is looked up first) —
 * so pod traffic can never be forwarded off the node, whatever net.ipv4.ip_forward says.
 */
export const guardTable = "27495";

export interface PodNetNames {
  readonly netns: string;
  readonly hostVeth: string;
  readonly podVeth: string;
}

/** Interface and namespace names for a pod (pure; interface names stay within 15 bytes). */
export function podNetNames(uid: string): PodNetNames {
  const h = createHash("sha256").update(uid).digest("hex");
  return {
    netns: `kg-${h.slice(0, 12)}`,
    hostVeth: `kg-h${h.slice(0, 10)}`,
    podVeth: `kg-p${h.slice(0, 10)}`,
  };
}

const ip = (...args: string[]) => run("ip", args);
const inNs = (ns: string, ...args: string[]) => run("ip", ["-n", ns, ...args]);

async function linkExists(name: string): Promise<boolean> {
  try {
    await ip("link", "show", "dev", name);
    return true;
  } catch {
    return false;
  }
}

export async function ensureBridge(): Promise<void> {
  if (!(await linkExists(bridgeName))) await ip("link", "add", bridgeName, "type", "bridge");
  const addrs = await ip("-4", "-o", "addr", "show", "dev", bridgeName);
  if (!addrs.includes(`${bridgeIP}/${podPrefixLength}`)) {
    await ip("addr", "add", `${bridgeIP}/${podPrefixLength}`, "dev", bridgeName);
  }
  await ip("link", "set", bridgeName, "up");
  await ip("route", "replace", "unreachable", "default", "table", guardTable);
  const rules = await ip("rule", "show", "priority", guardTable).catch(() => "");
  if (!rules.includes(`lookup ${guardTable}`)) {
    await ip("rule", "add", "iif", bridgeName, "priority", guardTable, "lookup", guardTable);
  }
}

export async function netnsList(): Promise<string[]> {
  const out = await ip("netns", "list");
  return out
    .split("\n")
    .map(l => l.split(" ")[0])
    .filter(n => n.startsWith("kg-"));
}

/** Creates the pod's namespace and veth pair, addresses eth0 and routes via the bridge. */
export async function setupPodNetwork(uid: string, podIP: string): Promise<PodNetNames> {
  const n = podNetNames(uid);
  await teardownPodNetwork(uid);
  await ip("netns", "add", n.netns);
  await ip("link", "add", n.hostVeth, "type", "veth", "peer", "name", n.podVeth);
  await ip("link", "set", n.podVeth, "netns", n.netns);
  await ip("link", "set", n.hostVeth, "master", bridgeName);
  await ip("link", "set", n.hostVeth, "up");
  await inNs(n.netns, "link", "set", "lo", "up");
  await inNs(n.netns, "link", "set", n.podVeth, "name", "eth0");
  await inNs(n.netns, "addr", "add", `${podIP}/${podPrefixLength}`, "dev", "eth0");
  await inNs(n.netns, "link", "set", "eth0", "up");
  await inNs(n.netns, "route", "add", "default", "via", bridgeIP);
  return n;
}

/** Kills what still runs in the namespace, then removes it and the host side of the veth. */
export async function teardownPodNetwork(uid: string): Promise<void> {
  const n = podNetNames(uid);
  await removeNetns(n.netns);
  if (await linkExists(n.hostVeth)) await ip("link", "del", n.hostVeth).catch(() => undefined);
}

export async function removeNetns(netns: string): Promise<void> {
  if (!(await netnsList()).includes(netns)) return;
  const pids = (await ip("netns", "pids", netns).catch(() => ""))
    .split("\n")
    .map(s => Number(s.trim()))
    .filter(p => p > 0);
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  await ip("netns", "delete", netns).catch(() => undefined);
}
