/**
 * Instruments of the tenant-boundary suites (tests/e2e/tenant-boundary.test.ts,
 * tests/integration/property-caddy.test.ts): names that resolve to loopback on this machine,
 * the CRD-valid spellings admission must refuse, whether a reply came from a Caddy admin API,
 * canaries that count every request a proxy forwards to a refused destination, and memory
 * readings of proxy and controller processes from /proc.
 */
import { ChildProcess, spawn, spawnSync } from "node:child_process";
import { readFileSync, readdirSync, readlinkSync, statSync } from "node:fs";
import { Server, createServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { AddressInfo } from "node:net";
import { hostname } from "node:os";
import { Agent, request } from "undici";
import { podNetnsPath } from "./node";

/** The XBackend CRD's hostname pattern (Gateway API v1.7.0 experimental). */
export const XBACKEND_HOSTNAME =
  /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * Names that are loopback by definition or read as an IP address by a C resolver, in the
 * spellings the XBackend CRD lets a tenant store (lower case, no trailing dot): admission refuses
 * each (docs/operations.md §11).
 */
export const LOOPBACK_SPELLINGS: readonly string[] = [
  "localhost",
  "api.localhost",
  "localhost.localdomain",
  "ip6-localhost",
  "ip6-loopback",
  "127.0.0.1",
  "127.1",
  "2130706433",
  "0x7f000001",
  "0177.0.0.1",
  "0",
  "0.0.0.0",
  "169.254.169.254",
  "2852039166",
];

/**
 * Names this machine's /etc/hosts (and the host name) resolves to a loopback address that are
 * not loopback by definition (e.g. the host's own name): admission cannot know them, only the
 * dial-time check of the proxy refuses them, wherever a proxy resolves them (a pod's /etc/hosts
 * is the kubelet's: its own name and localhost).
 */
export function loopbackResolvingNames(): string[] {
  const names = new Set<string>();
  let hosts = "";
  try {
    hosts = readFileSync("/etc/hosts", "utf8");
  } catch {
    // no hosts file: only the host name below
  }
  for (const line of hosts.split("\n")) {
    const [address, ...aliases] = line.replace(/#.*/, "").trim().split(/\s+/);
    if (!address || !(/^127\./.test(address) || address === "::1")) continue;
    for (const a of aliases) names.add(a.toLowerCase());
  }
  names.add(hostname().toLowerCase());
  return [...names]
    .filter(n => XBACKEND_HOSTNAME.test(n) && !n.endsWith(".cluster.local"))
    .filter(n => !LOOPBACK_SPELLINGS.includes(n) && !/(^|\.)localhost$/.test(n))
    .filter(n => !/^ip6-/.test(n) && !/^[0-9.]+$/.test(n) && !/^0x[0-9a-f]+$/.test(n))
    .sort();
}

/** Host header spellings a client may send to aim at an admin API on loopback. */
export const ADMIN_HOSTS: readonly string[] = [
  "localhost:2019",
  "localhost",
  "127.0.0.1:2019",
  "[::1]:2019",
];

/** Admin API paths an anonymous client would try (read, write, route tables, by id). */
export const ADMIN_PATHS: readonly { readonly method: "GET" | "POST"; readonly path: string }[] = [
  { method: "GET", path: "/config/" },
  { method: "GET", path: "/kengine/route-tables/" },
  { method: "GET", path: "/id/kengine" },
  { method: "GET", path: "/reverse_proxy/upstreams" },
  { method: "POST", path: "/load" },
];

/**
 * A body for POST /load that a Caddy admin API refuses before it touches its config (not JSON):
 * its error answer proves the admin API was reached without harming the proxy.
 */
export const HARMLESS_LOAD = '{"apps": not json';

/**
 * Whether a reply came from a Caddy admin API: a config or route-table read (JSON with the
 * config's keys, a key in PEM), or one of the admin API's own error texts.
 */
export function looksLikeAdmin(status: number, body: string): boolean {
  if (/load_pem|"apps"\s*:|"admin"\s*:|"servers"\s*:|"listen"\s*:/.test(body)) return true;
  if (
    /loading config|decoding request body|unknown object ID|unrecognized config|"error"\s*:/i.test(
      body,
    )
  )
    return true;
  // The route-table endpoint lists tables as JSON; the upstreams endpoint an array of upstreams.
  if (
    status === 200 &&
    /^\s*[[{]/.test(body) &&
    /"(address|num_requests|fails|tables?)"/.test(body)
  )
    return true;
  return false;
}

/* ------------------------------------------------------------------ canaries */

export interface CanaryHit {
  readonly port: number;
  readonly method: string;
  readonly url: string;
  readonly host: string;
}

/**
 * A loopback HTTP server on this host that records every request and answers 200 with `body`
 * ("canary"; an admin decoy answers what an admin API would).
 */
export interface HostCanary {
  readonly port: number;
  readonly hits: CanaryHit[];
  close(): Promise<void>;
}

export async function hostCanary(
  host = "127.0.0.1",
  body = "canary",
  tls?: { readonly cert: string; readonly key: string },
): Promise<HostCanary> {
  const hits: CanaryHit[] = [];
  const handler = (
    req: import("node:http").IncomingMessage,
    res: import("node:http").ServerResponse,
  ) => {
    hits.push({
      port: (server.address() as AddressInfo).port,
      method: req.method ?? "",
      url: req.url ?? "",
      host: req.headers.host ?? "",
    });
    req.resume();
    req.on("end", () => res.writeHead(200).end(body));
  };
  const server: Server = tls ? createHttpsServer(tls, handler) : createServer(handler);
  await new Promise<void>(r => server.listen(0, host, () => r()));
  return {
    port: (server.address() as AddressInfo).port,
    hits,
    close: () =>
      new Promise(r => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/**
 * A canary inside a pod's network namespace (its sandbox's, podNetnsPath): listens on
 * every address of the pod (0.0.0.0 and ::) at each of `ports` it can bind, answers 200 "canary"
 * and reports each request. A port already taken (e.g. an admin API still on loopback TCP) is
 * reported in `unbound`, not fatal.
 */
export interface PodCanary {
  /** The pod's uid, and its network namespace's path. */
  readonly uid: string;
  readonly netns: string;
  readonly hits: CanaryHit[];
  /** Ports bound, once listening. */
  readonly ready: Promise<{ bound: number[]; unbound: number[] }>;
  stop(): void;
}

const CANARY_SOURCE = `
const http = require("node:http");
const ports = JSON.parse(process.argv[1]);
const bound = [], unbound = [];
let pending = ports.length;
const done = () => { if (--pending === 0) console.log(JSON.stringify({ ready: true, bound, unbound })); };
for (const port of ports) {
  const s = http.createServer((req, res) => {
    console.log(JSON.stringify({ hit: { port, method: req.method, url: req.url, host: req.headers.host || "" } }));
    req.resume();
    req.on("end", () => res.writeHead(200).end("canary"));
  });
  s.once("error", () => { unbound.push(port); done(); });
  s.listen({ port, host: "::", ipv6Only: false }, () => { bound.push(port); done(); });
}
`;

export function podCanary(uid: string, ports: readonly number[]): PodCanary {
  const netns = podNetnsPath(uid);
  const hits: CanaryHit[] = [];
  const child: ChildProcess = spawn(
    "nsenter",
    [`--net=${netns}`, process.execPath, "-e", CANARY_SOURCE, JSON.stringify(ports)],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let buffer = "";
  const ready = new Promise<{ bound: number[]; unbound: number[] }>((resolve, reject) => {
    child.stdout!.on("data", (d: Buffer) => {
      buffer += d.toString();
      let nl: number;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        try {
          const m = JSON.parse(line) as {
            ready?: boolean;
            bound?: number[];
            unbound?: number[];
            hit?: CanaryHit;
          };
          if (m.hit) hits.push(m.hit);
          if (m.ready) resolve({ bound: m.bound ?? [], unbound: m.unbound ?? [] });
        } catch {
          // not a line of ours
        }
      }
    });
    let err = "";
    child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    child.once("exit", code => reject(new Error(`canary in ${netns} exited (${code}): ${err}`)));
  });
  ready.catch(() => undefined);
  return {
    uid,
    netns,
    hits,
    ready,
    stop: () => {
      if (child.exitCode === null) child.kill("SIGKILL");
    },
  };
}

/* ------------------------------------------------------------------ memory from /proc */

export interface Memory {
  /** Resident now (VmRSS), MiB. */
  readonly rssMiB: number;
  /** Highest resident so far (VmHWM), MiB. */
  readonly peakMiB: number;
}

const round1 = (x: number): number => Math.round(x * 10) / 10;

export function memoryOf(pid: number): Memory {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (f: string) => Number(new RegExp(`${f}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return { rssMiB: round1(kb("VmRSS") / 1024), peakMiB: round1(kb("VmHWM") / 1024) };
}

/** The Caddy processes of a pod: the processes in its network namespace that run caddy. */
export function caddyPidsOfPod(uid: string): number[] {
  const ns = `net:[${statSync(podNetnsPath(uid)).ino}]`;
  return readdirSync("/proc")
    .filter(d => /^\d+$/.test(d))
    .filter(d => {
      try {
        return readlinkSync(`/proc/${d}/ns/net`) === ns;
      } catch {
        return false;
      }
    })
    .map(Number)
    .filter(pid => {
      try {
        const argv0 = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0] ?? "";
        const exe = readlinkSync(`/proc/${pid}/exe`);
        return /(^|\/)caddy$/.test(argv0) || /(^|\/)caddy$/.test(exe);
      } catch {
        return false;
      }
    });
}

/** The pid of the controller (the module process serving the webhook on :3000). */
export function controllerPid(): number {
  const out = spawnSync("ss", ["-ltnpH", "sport = :3000"], { encoding: "utf8" }).stdout ?? "";
  const pid = /pid=(\d+)/.exec(out)?.[1];
  if (!pid) throw new Error(`no process listens on :3000 (${out})`);
  return Number(pid);
}

/* ------------------------------------------------------------------ the controller's metrics */

const moduleAgent = new Agent({ connect: { rejectUnauthorized: false } });

/** The module's /metrics (pepr dev serves them on :3000), as a lookup summing matching series. */
export async function controllerMetrics(): Promise<{
  text: string;
  value: (name: string, labels?: string) => number | undefined;
}> {
  const text = await request("https://127.0.0.1:3000/metrics", { dispatcher: moduleAgent })
    .then(r => r.body.text())
    .catch(() => "");
  return {
    text,
    value: (name, labels = "") => {
      let sum: number | undefined;
      for (const m of text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? ([0-9.eE+-]+)$`, "gm")))
        if ((m[1] ?? "").includes(labels)) sum = (sum ?? 0) + Number(m[2]);
      return sum;
    },
  };
}
