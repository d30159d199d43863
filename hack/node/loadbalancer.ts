/**
 * The local load balancer: what a cloud's load balancer gives LoadBalancer Services, on one
 * machine. Each Service gets a loopback address (127.20.x.y, unique per Service) in
 * status.loadBalancer.ingress, and a host-side TCP/UDP forwarder on that address and each
 * Service port that round-robins over the Service's ready endpoints (EndpointSlices). Services
 * with a spec.loadBalancerClass belong to another implementation and are left alone, as the
 * cloud service controller does.
 *
 * The status says `ipMode: Proxy`: kube-proxy captures traffic to a "VIP" address itself (DNAT
 * to an endpoint), which cannot route from a loopback address to the pod bridge without
 * route_localnet (the connection timed out); "Proxy" tells it this load balancer forwards.
 * kube-proxy serves the cluster IPs.
 */
import { createSocket, Socket as UdpSocket } from "node:dgram";
import { connect, createServer, Server } from "node:net";
import { Api, ApiError, Informer, KubeObject, keyOf } from "./api";
import type { Logger } from "./log";

export interface ServicePort {
  readonly name?: string;
  readonly port: number;
  readonly protocol?: string;
}

export interface Service extends KubeObject {
  readonly spec: {
    readonly type?: string;
    readonly ports?: readonly ServicePort[];
    readonly loadBalancerClass?: string;
    readonly loadBalancerIP?: string;
  };
  readonly status?: { readonly loadBalancer?: { readonly ingress?: readonly { ip?: string }[] } };
}

export interface EndpointSlice extends KubeObject {
  readonly addressType: string;
  readonly endpoints?: readonly {
    addresses: readonly string[];
    conditions?: { ready?: boolean; serving?: boolean; terminating?: boolean };
  }[];
  readonly ports?: readonly { name?: string; port?: number; protocol?: string }[] | null;
}

export interface Backend {
  readonly ip: string;
  readonly port: number;
}

const lbPrefix = "127.20.";

export const isLocalLbAddress = (ip: string | undefined): boolean =>
  !!ip && /^127\.20\.\d{1,3}\.\d{1,3}$/.test(ip);

/** Whether this node implements the Service's load balancer (pure). */
export const wantsLoadBalancer = (s: Service): boolean =>
  s.spec.type === "LoadBalancer" && !s.spec.loadBalancerClass;

/** Picks an address: the preferred one if it is ours and free, else the first free (pure). */
export function pickAddress(
  used: ReadonlySet<string>,
  preferred?: readonly (string | undefined)[],
): string | undefined {
  for (const p of preferred ?? []) if (p && isLocalLbAddress(p) && !used.has(p)) return p;
  for (let i = 0; i < 64 * 254; i++) {
    const ip = `${lbPrefix}${Math.floor(i / 254)}.${(i % 254) + 1}`;
    if (!used.has(ip)) return ip;
  }
  return undefined;
}

/**
 * The endpoints for one Service port, from the Service's EndpointSlices (pure): the ready ones
 * (an unset `ready` counts as ready); when there is none, the terminating ones that still
 * serve, as kube-proxy does (KEP-1669, GA in Kubernetes 1.28). So a deleted pod that serves on
 * during its preStop sleep takes the traffic while its replacement is not ready yet, instead
 * of every connection being refused.
 */
export function backendsFor(port: ServicePort, slices: readonly EndpointSlice[]): Backend[] {
  const ready = endpointsFor(port, slices, c => c?.ready !== false);
  return ready.length > 0
    ? ready
    : endpointsFor(port, slices, c => c?.serving === true && c.terminating === true);
}

type Conditions = NonNullable<NonNullable<EndpointSlice["endpoints"]>[number]["conditions"]>;

function endpointsFor(
  port: ServicePort,
  slices: readonly EndpointSlice[],
  take: (c: Conditions | undefined) => boolean,
): Backend[] {
  const out: Backend[] = [];
  const seen = new Set<string>();
  const protocol = port.protocol ?? "TCP";
  for (const s of slices) {
    if (s.addressType !== "IPv4") continue;
    const sp = (s.ports ?? []).find(
      p => (p.name ?? "") === (port.name ?? "") && (p.protocol ?? "TCP") === protocol,
    );
    if (!sp?.port) continue;
    for (const e of s.endpoints ?? []) {
      if (!take(e.conditions)) continue;
      for (const ip of e.addresses) {
        const k = `${ip}:${sp.port}`;
        if (seen.has(k)) continue;
        seen.add(k);
        out.push({ ip, port: sp.port });
      }
    }
  }
  return out.sort((a, b) => (a.ip === b.ip ? a.port - b.port : a.ip < b.ip ? -1 : 1));
}

type Listener =
  | { readonly kind: "tcp"; readonly server: Server }
  | {
      readonly kind: "udp";
      readonly socket: UdpSocket;
      readonly sessions: Map<string, UdpSession>;
    };

/** One client of a UDP forwarder: its own socket to the chosen endpoint, closed when idle. */
interface UdpSession {
  readonly socket: UdpSocket;
  timer?: NodeJS.Timeout;
  connected: boolean;
  readonly queue: Buffer[];
}

const safeClose = (s: UdpSocket): void => {
  try {
    s.close();
  } catch {
    // already closed
  }
};

interface Balancer {
  readonly ip: string;
  /** "<protocol>/<port>" → listener */
  readonly listeners: Map<string, Listener>;
  readonly rr: Map<string, number>;
}

export class LoadBalancers {
  private readonly balancers = new Map<string, Balancer>();
  private services: Informer<Service> | undefined;
  private slices: Informer<EndpointSlice> | undefined;

  constructor(
    private readonly api: Api,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.slices = this.api.inform<EndpointSlice>(
      "/apis/discovery.k8s.io/v1/endpointslices",
      () => undefined,
    );
    this.services = this.api.inform<Service>("/api/v1/services", (key, svc) =>
      this.onService(key, svc),
    );
  }

  stop(): void {
    this.services?.stop();
    this.slices?.stop();
    for (const key of [...this.balancers.keys()]) this.close(key);
  }

  private used(): Set<string> {
    return new Set([...this.balancers.values()].map(b => b.ip));
  }

  private onService(key: string, svc: Service | undefined): void {
    if (!svc || !wantsLoadBalancer(svc)) {
      if (this.balancers.has(key)) this.close(key);
      if (svc && isLocalLbAddress(svc.status?.loadBalancer?.ingress?.[0]?.ip))
        void this.writeStatus(svc, undefined);
      return;
    }
    let b = this.balancers.get(key);
    if (!b) {
      const ip = pickAddress(this.used(), [
        svc.spec.loadBalancerIP,
        ...(svc.status?.loadBalancer?.ingress ?? []).map(i => i.ip),
      ]);
      if (!ip) {
        this.log.error(`service ${key}: no free load balancer address`);
        return;
      }
      b = { ip, listeners: new Map(), rr: new Map() };
      this.balancers.set(key, b);
      this.log.info(`service ${key}: load balancer address ${ip}`);
    }
    this.syncListeners(key, svc, b);
    const current = svc.status?.loadBalancer?.ingress ?? [];
    if (current.length !== 1 || current[0].ip !== b.ip) void this.writeStatus(svc, b.ip);
  }

  private syncListeners(key: string, svc: Service, b: Balancer): void {
    const wanted = new Map(
      (svc.spec.ports ?? []).map(p => [`${p.protocol ?? "TCP"}/${p.port}`, p]),
    );
    for (const [k, l] of b.listeners) {
      if (!wanted.has(k)) {
        closeListener(l);
        b.listeners.delete(k);
      }
    }
    for (const [k, port] of wanted) {
      if (b.listeners.has(k)) continue;
      const next = (): Backend | undefined => {
        const svcNow = this.services?.cache.get(key);
        const p = svcNow?.spec.ports?.find(x => `${x.protocol ?? "TCP"}/${x.port}` === k) ?? port;
        const list = backendsFor(p, this.slicesOf(key));
        if (!list.length) return undefined;
        const i = (b.rr.get(k) ?? 0) % list.length;
        b.rr.set(k, i + 1);
        return list[i];
      };
      const proto = port.protocol ?? "TCP";
      if (proto === "TCP") b.listeners.set(k, this.tcp(b.ip, port.port, next, key));
      else if (proto === "UDP") b.listeners.set(k, this.udp(b.ip, port.port, next, key));
      else this.log.warn(`service ${key}: ${proto} ports are not forwarded`);
    }
  }

  private slicesOf(serviceKey: string): EndpointSlice[] {
    const [ns, name] = serviceKey.split("/");
    return [...(this.slices?.cache.values() ?? [])].filter(
      s =>
        s.metadata.namespace === ns && s.metadata.labels?.["kubernetes.io/service-name"] === name,
    );
  }

  private tcp(ip: string, port: number, next: () => Backend | undefined, key: string): Listener {
    const server = createServer(client => {
      const be = next();
      if (!be) {
        client.destroy();
        return;
      }
      const up = connect({ host: be.ip, port: be.port });
      client.pipe(up).pipe(client);
      const done = () => {
        client.destroy();
        up.destroy();
      };
      client.on("error", done);
      up.on("error", done);
      client.on("close", done);
      up.on("close", done);
    });
    server.on("error", e =>
      this.log.error(`service ${key}: listen ${ip}:${port}/TCP: ${e.message}`),
    );
    server.listen(port, ip);
    return { kind: "tcp", server };
  }

  private udp(ip: string, port: number, next: () => Backend | undefined, key: string): Listener {
    const socket = createSocket("udp4");
    const sessions = new Map<string, UdpSession>();
    const end = (sk: string, sess: UdpSession) => {
      clearTimeout(sess.timer);
      sessions.delete(sk);
      safeClose(sess.socket);
    };
    socket.on("message", (msg, rinfo) => {
      const sk = `${rinfo.address}:${rinfo.port}`;
      let sess = sessions.get(sk);
      const bump = (x: UdpSession) => {
        clearTimeout(x.timer);
        x.timer = setTimeout(() => end(sk, x), 30_000);
      };
      if (!sess) {
        const be = next();
        if (!be) return;
        const created: UdpSession = { socket: createSocket("udp4"), connected: false, queue: [] };
        sess = created;
        sessions.set(sk, created);
        created.socket.on("message", reply => {
          bump(created);
          try {
            socket.send(reply, rinfo.port, rinfo.address);
          } catch {
            end(sk, created); // the listener is gone
          }
        });
        created.socket.on("error", () => end(sk, created));
        created.socket.once("connect", () => {
          created.connected = true;
          for (const m of created.queue.splice(0)) created.socket.send(m);
        });
        created.socket.connect(be.port, be.ip);
      }
      bump(sess);
      if (sess.connected) sess.socket.send(msg);
      else sess.queue.push(msg);
    });
    socket.on("error", e =>
      this.log.error(`service ${key}: listen ${ip}:${port}/UDP: ${e.message}`),
    );
    socket.bind(port, ip);
    return { kind: "udp", socket, sessions };
  }

  private close(key: string): void {
    const b = this.balancers.get(key);
    if (!b) return;
    for (const l of b.listeners.values()) closeListener(l);
    this.balancers.delete(key);
    this.log.info(`service ${key}: load balancer ${b.ip} removed`);
  }

  private async writeStatus(svc: Service, ip: string | undefined): Promise<void> {
    try {
      await this.api.patch(
        `/api/v1/namespaces/${svc.metadata.namespace}/services/${svc.metadata.name}/status`,
        {
          status: {
            loadBalancer: ip ? { ingress: [{ ip, ipMode: "Proxy" }] } : { ingress: null },
          },
        },
      );
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 404))
        this.log.warn(`service ${keyOf(svc)}: status: ${String(e)}`);
    }
  }
}

function closeListener(l: Listener): void {
  if (l.kind === "tcp") l.server.close();
  else {
    for (const sess of l.sessions.values()) {
      clearTimeout(sess.timer);
      safeClose(sess.socket);
    }
    l.sessions.clear();
    safeClose(l.socket);
  }
}
