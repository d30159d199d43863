/** Pod IP allocation in the node's /24, persisted so a kubelet restart keeps pod IPs. */
import { existsSync, readFileSync, writeFileSync } from "node:fs";

export const podCIDR = "10.244.0.0/24";
export const bridgeIP = "10.244.0.1";
export const podPrefixLength = 24;
const prefix = "10.244.0.";
const first = 2;
const last = 254;

/** Picks a free address for uid; keeps the one it already has (pure). */
export function allocate(
  assigned: ReadonlyMap<string, string>,
  uid: string,
  lastHost = first - 1,
): string | undefined {
  const mine = assigned.get(uid);
  if (mine) return mine;
  const used = new Set(assigned.values());
  // Walk forward from the last handed-out host so a deleted pod's IP is not reused at once.
  for (let i = 0; i <= last - first; i++) {
    const host = first + ((lastHost + 1 - first + i) % (last - first + 1));
    const ip = prefix + host;
    if (!used.has(ip)) return ip;
  }
  return undefined;
}

export class Ipam {
  private readonly assigned = new Map<string, string>();
  private lastHost = first - 1;

  constructor(private readonly file: string) {
    if (existsSync(file)) {
      const saved = JSON.parse(readFileSync(file, "utf8")) as {
        assigned: Record<string, string>;
        lastHost: number;
      };
      for (const [k, v] of Object.entries(saved.assigned)) this.assigned.set(k, v);
      this.lastHost = saved.lastHost;
    }
  }

  allocate(uid: string): string {
    const ip = allocate(this.assigned, uid, this.lastHost);
    if (!ip) throw new Error(`no free pod IP in ${podCIDR}`);
    if (!this.assigned.has(uid)) {
      this.assigned.set(uid, ip);
      this.lastHost = Number(ip.split(".")[3]);
      this.save();
    }
    return ip;
  }

  release(uid: string): void {
    if (this.assigned.delete(uid)) this.save();
  }

  /** Drops every allocation whose uid is not in keep. */
  retain(keep: ReadonlySet<string>): void {
    let changed = false;
    for (const uid of [...this.assigned.keys()]) {
      if (!keep.has(uid)) changed = this.assigned.delete(uid) || changed;
    }
    if (changed) this.save();
  }

  private save(): void {
    writeFileSync(
      this.file,
      JSON.stringify({ assigned: Object.fromEntries(this.assigned), lastHost: this.lastHost }),
    );
  }
}
