/**
 * In-cluster access to the API server, as a node with kube-proxy gives it: every container gets
 * the `kubernetes` Service's environment (KUBERNETES_SERVICE_HOST/PORT, as any kubelet sets),
 * and the Service's ClusterIP answers from the pods. There is no kube-proxy here, so the kubelet
 * adds the ClusterIP (10.96.0.1, in the API server's certificate) to the pod bridge kg-br0 as a
 * host address and forwards TCP on it to the API server's loopback address. Pods reach it via
 * their default route; nothing outside the node can (the address lives on the pod bridge only).
 */
import { createConnection, createServer, Server, Socket } from "node:net";
import type { Api } from "./api";
import { run } from "./exec";
import type { Logger } from "./log";
import { bridgeName } from "./network";

export interface ApiService {
  /** The `kubernetes` Service's ClusterIP and port, what pods dial. */
  readonly host: string;
  readonly port: number;
}

/** The environment a kubelet gives every container for the `kubernetes` Service (pure). */
export function apiServiceEnv(s: ApiService): Record<string, string> {
  const url = `tcp://${s.host}:${s.port}`;
  const prefix = `KUBERNETES_PORT_${s.port}_TCP`;
  return {
    KUBERNETES_SERVICE_HOST: s.host,
    KUBERNETES_SERVICE_PORT: String(s.port),
    KUBERNETES_SERVICE_PORT_HTTPS: String(s.port),
    KUBERNETES_PORT: url,
    [prefix]: url,
    [`${prefix}_PROTO`]: "tcp",
    [`${prefix}_PORT`]: String(s.port),
    [`${prefix}_ADDR`]: s.host,
  };
}

/** host:port of an https:// server URL (pure). */
export function upstreamOf(server: string): { host: string; port: number } {
  const u = new URL(server);
  return { host: u.hostname.replace(/^\[|\]$/g, ""), port: Number(u.port || 443) };
}

interface ServiceObject {
  readonly spec?: {
    readonly clusterIP?: string;
    readonly ports?: readonly { readonly name?: string; readonly port: number }[];
  };
}

/** Forwards the `kubernetes` Service's ClusterIP to the API server (see the file comment). */
export class ApiServiceForwarder {
  private forwarder: { stop(): void } | undefined;

  constructor(
    private readonly api: Api,
    private readonly upstream: { host: string; port: number },
    private readonly log: Logger,
  ) {}

  /** Reads the Service, adds its ClusterIP to the bridge and listens; returns what pods dial. */
  async start(): Promise<ApiService> {
    const svc = await this.api.get<ServiceObject>("/api/v1/namespaces/default/services/kubernetes");
    const host = svc.spec?.clusterIP;
    const port = svc.spec?.ports?.find(p => p.name === "https")?.port ?? svc.spec?.ports?.[0]?.port;
    if (!host || !port) throw new Error("the default/kubernetes Service has no ClusterIP or port");
    const addrs = await run("ip", ["-4", "-o", "addr", "show", "dev", bridgeName]);
    if (!addrs.includes(` ${host}/32 `)) {
      await run("ip", ["addr", "add", `${host}/32`, "dev", bridgeName]);
    }
    this.forwarder = await forwardTcp({ host, port }, this.upstream);
    this.log.info(
      `kubernetes Service ${host}:${port} → API server ${this.upstream.host}:${this.upstream.port}`,
    );
    return { host, port };
  }

  stop(): void {
    this.forwarder?.stop();
  }
}

/** A plain TCP forwarder from `listen` to `upstream`; stop() closes it and every connection. */
export async function forwardTcp(
  listen: { host: string; port: number },
  upstream: { host: string; port: number },
): Promise<{ stop(): void }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer(client => {
    const up = createConnection(upstream);
    for (const s of [client, up]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => {
        client.destroy();
        up.destroy();
      });
    }
    client.pipe(up);
    up.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(listen, resolve);
  });
  return {
    stop() {
      server.close();
      for (const s of sockets) s.destroy();
    },
  };
}
