/**
 * The tenant boundary on the local cluster: a shared Gateway of the
 * platform team (2 real Bundled proxy pods on the local node, an HTTP listener on 80 and an
 * ACME HTTPS listener on 443 certified by a real Pebble) that admits routes and ListenerSets from
 * every namespace (docs/operations.md §11's shared set-up), and a tenant in its own namespace
 * trying to turn it against its owners. Throughout every case a steady client hits the platform's
 * route and must see no failure; each case adds a row to reports/e2e.json (`tenantBoundary`).
 *
 * Cases:
 *   - admin read through an ExternalHostname XBackend: loopback spellings refused at admission;
 *     loopback-resolving names unresolved with the class default (externalHostnames Denied) and
 *     502 with the class opt-in (Allowed); no admin answer to any path or Host spelling;
 *   - admin write (POST /load) the same way; a RequestHeaderModifier setting Host:
 *     localhost:2019; a RequestMirror and an ExternalAuth filter aimed at such a name: a canary
 *     listening on every address inside each proxy pod sees no request;
 *   - HTTP-01 for the platform's names through a tenant ListenerSet listener and tenant Secrets:
 *     never answered with the tenant's key authorization; the platform's own order succeeds;
 *   - a tenant-owned Gateway in the shared class: no issuer of its own (tenant parameters with
 *     spec.acme refused), none of the class's unless granted; the controller fetches nothing the
 *     tenant names;
 *   - an upload far beyond the ExternalAuth cap: the largest cap a tenant can set is admitted, a
 *     128 MiB upload through it leaves the proxies' peak RSS within 32 MiB of where it was, and
 *     no proxy restarted: under their 160Mi memory limit (the real node's memory cgroup) a
 *     buffered upload would have been OOM-killed;
 *   - 400 ConfigMaps of 1 MiB in a tenant namespace: controller RSS within 20 MiB;
 *   - 2,000 create/delete cycles of tenant objects: the ingest layer's remembered names flat;
 *   - a silent watch (every open connection of the controller to the API server goes half-open):
 *     a route created right after is served within 60 s plus the re-list and push.
 */
import { ChildProcess } from "node:child_process";
import { createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { Pebble, startPebble } from "../../hack/pebble";
import { PeprDev, startModule } from "../support/module";
import {
  ACME_ISSUER_OPTION,
  AcmeAnnotation,
  acmeSecretName,
} from "../../capabilities/validation/acme";
import { httpsVerified } from "../support/acme";
import {
  ADMIN_HOSTS,
  ADMIN_PATHS,
  HARMLESS_LOAD,
  LOOPBACK_SPELLINGS,
  PodCanary,
  caddyPidsOfPod,
  controllerMetrics,
  controllerPid,
  hostCanary,
  looksLikeAdmin,
  loopbackResolvingNames,
  memoryOf,
  podCanary,
} from "../support/boundary";
import { selfSigned, writeReportSection } from "../support/demo-gateway";
import {
  applyItems,
  createNamespace,
  deleteNamespace,
  eventually,
  kubectl,
  kubectlOk,
} from "../support/kube";
import { echoBackend } from "../support/manifests";
import { kubeconfigPath, repoRoot } from "../support/paths";
import { proxyPods } from "../support/proxy-pods";
import { SteadyResult, get, steadyClient } from "../support/traffic";

const GW = "shared";
const REPLICAS = 2;
const GWAPI = "gateway.networking.k8s.io/v1";
const XGWAPI = "gateway.networking.x-k8s.io/v1alpha1";
/** A port a canary holds inside each proxy pod (nothing of ours listens there). */
const CANARY_PORT = 19181;
/** Caddy's default admin address (where the admin API listened on loopback TCP before it moved to a unix socket). */
const ADMIN_PORT = 2019;
/** The proxy pods' own ports: readiness, management (mTLS), the error responder. */
const OWN_PORTS = [19080, 19443, 10500];
const UPLOAD_BYTES = 128 * 1024 * 1024;
const UPLOAD_PEAK_BOUND_MIB = 32;
/**
 * The proxies' memory limit (KengineParameters): about 56 MiB of RSS before the upload, so an
 * upload the proxy buffered would pass it and the node's memory cgroup would kill the proxy.
 */
const PROXY_MEMORY_LIMIT = "160Mi";
const BULK_CONFIGMAPS = 400;
const BULK_BYTES = 1_000_000;
const CONTROLLER_RSS_BOUND_MIB = 20;
const CYCLES = 2000;
const CYCLES_HEAP_BOUND_MIB = 8;
/** The silent-watch bound (KENGINE_WATCH_SILENCE), and what a re-list, build and push may add to it. */
const SILENT_WATCH_BOUND_S = 60;
const RELIST_AND_PUSH_S = 20;

interface Row {
  readonly scenario: string;
  readonly requests: number;
  readonly failures: number;
  readonly details: object;
}
const rows: Row[] = [];
const figures: Record<string, unknown> = {};

const seconds = (ms: number): number => Math.round(ms / 100) / 10;
const jsonpath = (args: string[], path: string): string =>
  kubectl([...args, "-o", `jsonpath=${path}`]).stdout.trim();

/* ------------------------------------------------------------------ the silent-watch relay */

/**
 * A TCP relay between the controller and the API server, in a worker thread (the test's own
 * thread blocks in kubectl for seconds at a time). `freeze` makes every connection open at that
 * moment silent in both directions without closing it (a half-open connection: a NAT or
 * conntrack entry dropped); connections opened later are relayed as usual.
 */
const RELAY_SOURCE = `
const net = require("node:net");
const { workerData, parentPort } = require("node:worker_threads");
const open = new Set();
const server = net.createServer(client => {
  const upstream = net.connect(workerData.port, workerData.host);
  const c = { client, upstream, frozen: false };
  open.add(c);
  client.on("data", d => { if (!c.frozen) upstream.write(d); });
  upstream.on("data", d => { if (!c.frozen) client.write(d); });
  const close = () => { open.delete(c); client.destroy(); upstream.destroy(); };
  for (const s of [client, upstream]) { s.on("close", close); s.on("error", close); }
});
server.listen(0, "127.0.0.1", () => parentPort.postMessage({ port: server.address().port }));
parentPort.on("message", m => {
  if (m === "freeze") {
    let n = 0;
    for (const c of open) if (!c.frozen) { c.frozen = true; n++; }
    parentPort.postMessage({ frozen: n });
  } else if (m === "release") {
    let n = 0;
    for (const c of [...open]) if (c.frozen) { n++; c.client.destroy(); c.upstream.destroy(); }
    parentPort.postMessage({ released: n });
  }
});
`;

interface Relay {
  readonly port: number;
  command(m: "freeze" | "release"): Promise<number>;
  stop(): Promise<void>;
}

async function startRelay(target: URL): Promise<Relay> {
  const worker = new Worker(RELAY_SOURCE, {
    eval: true,
    workerData: { host: target.hostname, port: Number(target.port) },
  });
  const port = await new Promise<number>((resolve, reject) => {
    worker.once("message", (m: { port: number }) => resolve(m.port));
    worker.once("error", reject);
  });
  return {
    port,
    command: m =>
      new Promise(resolve => {
        worker.once("message", (r: { frozen?: number; released?: number }) =>
          resolve(r.frozen ?? r.released ?? 0),
        );
        worker.postMessage(m);
      }),
    stop: async () => {
      await worker.terminate();
    },
  };
}

/* ------------------------------------------------------------------ the API server, in bulk */

/**
 * Creates objects through the API server with `concurrency` requests in flight (kubectl sends
 * one request after another: minutes for thousands of objects on a loaded machine), with the
 * admin credentials of the test kubeconfig.
 */
async function createAll(
  objects: readonly { kind: string; metadata: { namespace: string } }[],
  concurrency: number,
): Promise<void> {
  const kc = readFileSync(kubeconfigPath, "utf8");
  const field = (name: string) => {
    const v = new RegExp(`${name}:\\s*(\\S+)`).exec(kc)?.[1];
    if (!v) throw new Error(`no ${name} in ${kubeconfigPath}`);
    return v;
  };
  const server = new URL(field("server"));
  const agent = new HttpsAgent({
    ca: readFileSync(field("certificate-authority")),
    cert: readFileSync(field("client-certificate")),
    key: readFileSync(field("client-key")),
    keepAlive: true,
    maxSockets: concurrency,
  });
  const plural = (kind: string) => `${kind.toLowerCase()}s`;
  const one = (o: (typeof objects)[number]) =>
    new Promise<void>((resolve, reject) => {
      const body = JSON.stringify(o);
      const req = httpsRequest(
        {
          host: server.hostname,
          port: server.port,
          method: "POST",
          path: `/api/v1/namespaces/${o.metadata.namespace}/${plural(o.kind)}`,
          headers: {
            "content-type": "application/json",
            "content-length": Buffer.byteLength(body),
          },
          agent,
        },
        res => {
          let text = "";
          res.on("data", d => (text += d));
          res.on("end", () =>
            res.statusCode === 201
              ? resolve()
              : reject(new Error(`${res.statusCode}: ${text.slice(0, 300)}`)),
          );
        },
      );
      req.on("error", reject);
      req.end(body);
    });
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < objects.length) await one(objects[next++]!);
    }),
  );
  agent.destroy();
}

/** Deletes every object of `resource` in `namespace` with `selector` in one request. */
const deleteCollection = (namespace: string, resource: string, selector: string): void => {
  kubectlOk([
    "delete",
    "--raw",
    `/api/v1/namespaces/${namespace}/${resource}?labelSelector=${encodeURIComponent(selector)}`,
  ]);
};

/* ------------------------------------------------------------------ HTTP through the Gateway */

interface Reply {
  readonly status: number;
  readonly body: string;
  readonly error?: string;
}

/** One request through the Gateway (new connection), any method, optional body; never rejects. */
function send(
  address: string,
  host: string,
  path: string,
  method = "GET",
  body?: string,
  headers: Record<string, string> = {},
): Promise<Reply> {
  if (!/^127\./.test(address))
    return Promise.resolve({ status: 0, body: "", error: "not loopback" });
  return new Promise(resolve => {
    const req = httpRequest(
      {
        host: address,
        port: 80,
        path,
        method,
        headers: {
          Host: host,
          ...(body !== undefined && {
            "content-type": "application/json",
            "content-length": String(Buffer.byteLength(body)),
          }),
          ...headers,
        },
        timeout: 10_000,
        agent: false,
      },
      res => {
        let text = "";
        res.on("data", d => (text += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text.slice(0, 4000) }));
        res.on("error", e => resolve({ status: 0, body: text, error: e.message }));
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", e => resolve({ status: 0, body: "", error: e.message }));
    req.end(body);
  });
}

/** Streams `bytes` of zeros as a POST body through the Gateway; resolves with the status. */
function upload(address: string, host: string, bytes: number): Promise<Reply> {
  if (!/^127\./.test(address))
    return Promise.resolve({ status: 0, body: "", error: "not loopback" });
  const chunk = Buffer.alloc(1024 * 1024);
  return new Promise(resolve => {
    const req = httpRequest(
      {
        host: address,
        port: 80,
        path: "/upload",
        method: "POST",
        headers: { Host: host, "content-length": String(bytes) },
        timeout: 120_000,
        agent: false,
      },
      res => {
        let text = "";
        res.on("data", d => (text = (text + d).slice(-2000)));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on("error", e =>
          resolve({ status: res.statusCode ?? 0, body: text, error: e.message }),
        );
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", e => resolve({ status: 0, body: "", error: e.message }));
    let left = bytes;
    const pump = (): void => {
      while (left > 0) {
        const n = Math.min(left, chunk.length);
        left -= n;
        if (!req.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
          req.once("drain", pump);
          return;
        }
      }
      req.end();
    };
    pump();
  });
}

/* ------------------------------------------------------------------ the suite */

describe("the tenant boundary: no tenant object turns a shared Gateway against its owners", () => {
  let dev: PeprDev | undefined;
  let relay: Relay | undefined;
  let pebble: Pebble | undefined;
  let platform: string;
  let tenant: string;
  let bulk: string | undefined;
  let cls: string;
  let address = "";
  let dir: string;
  const canaries: PodCanary[] = [];
  const extraProcs: ChildProcess[] = [];
  const started = Date.now();
  let WWW = "";
  let SECURE = "";
  let TENANT_DOMAIN = "";
  const loopbackNames = loopbackResolvingNames();

  const canaryHits = () => canaries.flatMap(c => c.hits.map(h => ({ netns: c.netns, ...h })));

  /**
   * A canary on every address of each proxy pod (started for pods that have none yet, e.g.
   * after a rollout): any request forwarded to a refused destination inside a pod lands there.
   */
  async function armCanaries(): Promise<void> {
    for (const pod of proxyPods(platform, GW).filter(p => !p.deleting && p.ready)) {
      if (canaries.some(c => c.uid === pod.uid)) continue;
      const c = podCanary(pod.uid, [CANARY_PORT, ADMIN_PORT]);
      canaries.push(c);
      const bound = await c.ready;
      expect(bound.bound).toContain(CANARY_PORT);
      figures.canaryPorts = bound;
    }
  }

  /** Runs `body` with a steady client on the platform's route; records the row. */
  async function withPlatformTraffic<T>(
    scenario: string,
    body: () => Promise<T>,
    details: (r: T) => object = () => ({}),
  ): Promise<T> {
    await armCanaries();
    const client = steadyClient(address, WWW, { max: 100_000, maxMs: 900_000 });
    let traffic: SteadyResult | undefined;
    try {
      const r = await body();
      traffic = await client.stop();
      rows.push({
        scenario,
        requests: traffic.sent,
        failures: traffic.failures.length,
        details: { ...details(r), failed: traffic.failures.slice(0, 10) },
      });
      expect(traffic.sent).toBeGreaterThan(5);
      expect(traffic.failures).toEqual([]);
      return r;
    } finally {
      if (!traffic) {
        const t = await client.stop();
        rows.push({
          scenario: `${scenario} (failed)`,
          requests: t.sent,
          failures: t.failures.length,
          details: { failed: t.failures.slice(0, 10) },
        });
      }
    }
  }

  const params = (spec: object): object => ({
    apiVersion: "gateway.kengine.io/v1alpha1",
    kind: "KengineParameters",
    metadata: { name: "platform", namespace: platform },
    spec: {
      proxy: { replicas: REPLICAS, resources: { limits: { memory: PROXY_MEMORY_LIMIT } } },
      acme: {
        issuers: [
          {
            name: "pebble",
            server: pebble!.directory,
            email: "ops@example.com",
            caBundle: pebble!.tlsCaPem,
            challenge: "http-01",
          },
        ],
      },
      ...spec,
    },
  });

  const xbackend = (name: string, hostname: string, port: number): object => ({
    apiVersion: XGWAPI,
    kind: "XBackend",
    metadata: { name, namespace: tenant },
    spec: { type: "ExternalHostname", externalHostname: { hostname }, port: { number: port } },
  });
  const xref = (name: string) => ({ group: "gateway.networking.x-k8s.io", kind: "XBackend", name });
  const route = (name: string, hostnames: string[], rules: object[]): object => ({
    apiVersion: GWAPI,
    kind: "HTTPRoute",
    metadata: { name, namespace: tenant },
    spec: {
      parentRefs: [{ name: GW, namespace: platform, sectionName: "http" }],
      hostnames,
      rules,
    },
  });

  /** A route's condition on the shared Gateway: `status|reason|message`, once for its generation. */
  const routeCondition = (name: string, type: string): string | undefined => {
    const r = kubectl(["get", "httproute", name, "-n", tenant, "-o", "json"]);
    if (r.code !== 0) return undefined;
    const o = JSON.parse(r.stdout) as {
      metadata: { generation: number };
      status?: {
        parents?: {
          parentRef: { name: string };
          conditions?: {
            type: string;
            status: string;
            reason: string;
            message: string;
            observedGeneration?: number;
          }[];
        }[];
      };
    };
    const c = o.status?.parents
      ?.find(p => p.parentRef.name === GW)
      ?.conditions?.find(x => x.type === type);
    return c && c.observedGeneration === o.metadata.generation
      ? `${c.status}|${c.reason}|${c.message}`
      : undefined;
  }; /** Creates a route to the tenant's echo and waits until it is Accepted: the controller has
   * caught up with everything applied before it. */
  const routeAccepted = async (name: string): Promise<void> => {
    applyItems([
      route(name, [`${name}.${TENANT_DOMAIN}`], [{ backendRefs: [{ name: "echo", port: 8080 }] }]),
    ]);
    await eventually(
      `${name} accepted`,
      () => {
        const c = routeCondition(name, "Accepted");
        return c?.startsWith("True|") ? c : undefined;
      },
      120_000,
      500,
    );
  };

  /** Every admin path with every Host spelling (and `hosts`) through the Gateway. */
  async function adminProbes(
    hosts: readonly string[],
  ): Promise<{ host: string; path: string; reply: Reply }[]> {
    const out: { host: string; path: string; reply: Reply }[] = [];
    for (const host of hosts)
      for (const p of ADMIN_PATHS) {
        const reply = await send(
          address,
          host,
          p.path,
          p.method,
          p.method === "POST" ? HARMLESS_LOAD : undefined,
        );
        out.push({ host, path: `${p.method} ${p.path}`, reply });
      }
    return out;
  }
  const adminAnswers = (probes: { host: string; path: string; reply: Reply }[]) =>
    probes
      .filter(p => p.reply.status === 200 || looksLikeAdmin(p.reply.status, p.reply.body))
      .map(p => `${p.host} ${p.path}: ${p.reply.status} ${p.reply.body.slice(0, 200)}`);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "kg-boundary-"));
    // The controller's own API requests go through a relay that can make them silent.
    const kc = readFileSync(kubeconfigPath, "utf8");
    const server = /server:\s*(\S+)/.exec(kc)?.[1];
    if (!server) throw new Error(`no server in ${kubeconfigPath}`);
    relay = await startRelay(new URL(server));
    const relayed = join(dir, "kubeconfig");
    writeFileSync(relayed, kc.replace(server, `https://127.0.0.1:${relay.port}`));
    // pepr dev builds the module first (from a copy, tests/support/module.ts): it took minutes
    // on a loaded 2-core machine
    dev = await startModule({
      moduleKubeconfig: relayed,
      readyTimeoutMs: 600_000,
      echo: createWriteStream(join(repoRoot, "reports", "tenant-boundary-controller.log")),
    });

    platform = createNamespace("tb-platform");
    tenant = createNamespace("tb-tenant");
    cls = `boundary-${platform.slice(-6)}`;
    WWW = `www.${platform}.example.com`;
    SECURE = `secure.${platform}.example.com`;
    TENANT_DOMAIN = `${tenant}.example.com`;
    pebble = await startPebble({
      dir: join(dir, "pebble"),
      resolve: n => (n === SECURE || n === WWW ? address || undefined : undefined),
    });
    applyItems([
      ...echoBackend(platform),
      ...echoBackend(tenant),
      params({}),
      {
        apiVersion: GWAPI,
        kind: "GatewayClass",
        metadata: { name: cls },
        spec: {
          controllerName: "kengine.io/gateway-controller",
          parametersRef: {
            group: "gateway.kengine.io",
            kind: "KengineParameters",
            name: "platform",
            namespace: platform,
          },
        },
      },
      {
        apiVersion: GWAPI,
        kind: "Gateway",
        metadata: { name: GW, namespace: platform },
        spec: {
          gatewayClassName: cls,
          allowedListeners: { namespaces: { from: "All" } },
          listeners: [
            {
              name: "http",
              protocol: "HTTP",
              port: 80,
              allowedRoutes: { namespaces: { from: "All" } },
            },
            {
              name: "https",
              protocol: "HTTPS",
              port: 443,
              hostname: SECURE,
              tls: { mode: "Terminate", options: { [ACME_ISSUER_OPTION]: "pebble" } },
            },
          ],
        },
      },
      {
        apiVersion: GWAPI,
        kind: "HTTPRoute",
        metadata: { name: "platform", namespace: platform },
        spec: {
          parentRefs: [{ name: GW }],
          hostnames: [WWW, SECURE],
          rules: [{ backendRefs: [{ name: "echo", port: 8080 }] }],
        },
      },
    ]);
  }, 1_200_000);

  afterAll(async () => {
    for (const c of canaries) c.stop();
    for (const p of extraProcs) if (p.exitCode === null) p.kill("SIGKILL");
    figures.durationS = seconds(Date.now() - started);
    if (rows.length)
      writeReportSection("tenantBoundary", "tests/e2e/tenant-boundary.test.ts", {
        proxyReplicas: REPLICAS,
        client: "one GET at a time on the platform's route, new connection each, 20 ms apart",
        durationMs: Date.now() - started,
        figures,
        scenarios: rows,
      });
    await dev?.stop();
    await relay?.stop();
    await pebble?.close();
    if (cls) kubectl(["delete", "gatewayclass", cls, "--ignore-not-found", "--wait=false"]);
    for (const n of [platform, tenant, bulk]) if (n) deleteNamespace(n);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("programs the shared Gateway: the platform's route answers, Pebble certifies its ACME name", async () => {
    const t0 = Date.now();
    await eventually(
      `Gateway ${GW} Programmed=True with ${REPLICAS}/${REPLICAS} proxies`,
      () => {
        const p = jsonpath(
          ["get", "gateway", GW, "-n", platform],
          "{.status.conditions[?(@.type=='Programmed')].status}|{.status.conditions[?(@.type=='Programmed')].message}",
        );
        const pods = proxyPods(platform, GW).filter(x => !x.deleting);
        return p.startsWith(`True|${REPLICAS}/${REPLICAS} `) &&
          pods.length === REPLICAS &&
          pods.every(x => x.ready)
          ? p
          : undefined;
      },
      300_000,
      500,
    );
    address = jsonpath(["get", "gateway", GW, "-n", platform], "{.status.addresses[0].value}");
    expect(address).toMatch(/^127\./);
    await eventually(
      "a 200 on the platform's route",
      async () => {
        const r = await get(address, WWW, "/");
        return r.status === 200 ? r : undefined;
      },
      120_000,
      250,
    );
    figures.gatewayProgrammedS = seconds(Date.now() - t0);
    // The platform's own HTTP-01 works: Pebble validates through port 80 and issues.
    const issued = await eventually(
      "the platform's ACME listener programmed with Pebble's certificate",
      () => {
        const p = jsonpath(
          ["get", "gateway", GW, "-n", platform],
          "{.status.listeners[?(@.name=='https')].conditions[?(@.type=='Programmed')].status}",
        );
        return p === "True" ? p : undefined;
      },
      180_000,
      1000,
    );
    expect(issued).toBe("True");
    const served = await eventually(
      "the platform's certificate served, verified against Pebble's root",
      async () => {
        const r = await httpsVerified(address, SECURE, await pebble!.root());
        return r.status === 200 ? r : undefined;
      },
      60_000,
      500,
    );
    expect(served.status).toBe(200);
    figures.platformCertificateS = seconds(Date.now() - t0);
    await armCanaries();
  }, 600_000);

  it("admin read through an XBackend: loopback spellings refused at admission, loopback-resolving names not resolved by default", async () => {
    await withPlatformTraffic(
      "admin read through an ExternalHostname XBackend (class default: externalHostnames Denied)",
      async () => {
        // Loopback by definition, or read as an address: refused at admission, each by name,
        // once a route of ours references the XBackend (an XBackend no route of ours names is
        // not ours to judge). Admission's ownership look-ups are cached for 5 s
        // (capabilities/admission.ts), so one applied within that of its route may be stored:
        // the route then says ResolvedRefs=False, and the name is never dialled.
        applyItems([
          route(
            "spellings",
            [`spellings.${TENANT_DOMAIN}`],
            [{ backendRefs: LOOPBACK_SPELLINGS.map((_, i) => xref(`spelling-${i}`)) }],
          ),
        ]);
        const admitted: string[] = [];
        for (const [i, h] of LOOPBACK_SPELLINGS.entries()) {
          const r = kubectl(
            ["apply", "-f", "-"],
            JSON.stringify(xbackend(`spelling-${i}`, h, ADMIN_PORT)),
          );
          if (r.code === 0) admitted.push(h);
          else expect(r.stderr).toContain("denied the request");
        }
        // Names only this machine resolves to loopback pass admission; the class keeps
        // ExternalHostname backends off, so the route's backends do not resolve.
        const names = loopbackNames.slice(0, 2);
        expect(names.length).toBeGreaterThan(0);
        applyItems([
          ...names.flatMap((n, i) => [
            xbackend(`admin-${i}`, n, ADMIN_PORT),
            xbackend(`canary-${i}`, n, CANARY_PORT),
          ]),
          route(
            "admin-read",
            ["localhost", `admin.${TENANT_DOMAIN}`],
            [
              { backendRefs: [xref("admin-0")] },
              ...names.map((_, i) => ({
                matches: [{ path: { type: "PathPrefix", value: `/canary${i}` } }],
                backendRefs: [xref(`canary-${i}`)],
              })),
            ],
          ),
        ]);
        const resolved = await eventually(
          "admin-read's ResolvedRefs",
          () => routeCondition("admin-read", "ResolvedRefs"),
          90_000,
          500,
        );
        const probes = await adminProbes([...ADMIN_HOSTS, `admin.${TENANT_DOMAIN}`]);
        const canary = await send(address, `admin.${TENANT_DOMAIN}`, "/canary0");
        const answered = adminAnswers(probes);
        const spellingsResolved = await eventually(
          "spellings' ResolvedRefs",
          () => routeCondition("spellings", "ResolvedRefs"),
          90_000,
          500,
        );
        expect(answered).toEqual([]);
        // every spelling refused at admission, or, if stored, never resolved
        expect(admitted.length === 0 || spellingsResolved.startsWith("False|")).toBe(true);
        expect(resolved).toMatch(/^False\|/);
        expect(canary.status).toBeGreaterThanOrEqual(500);
        expect(canaryHits()).toEqual([]);
        return {
          names,
          resolved,
          spellingsAdmitted: admitted,
          spellingsResolved,
          probes: probes.length,
          statuses: [...new Set(probes.map(p => p.reply.status))],
        };
      },
      r => r,
    );
  }, 300_000);

  it("admin read and write with the class opt-in (externalHostnames: Allowed): a loopback-resolving name gets 502, never the admin API", async () => {
    await withPlatformTraffic(
      "admin read and write through an XBackend with externalHostnames Allowed",
      async () => {
        applyItems([params({ egress: { externalHostnames: "Allowed" } })]);
        const resolved = await eventually(
          "admin-read resolved once the class allows external hostnames",
          () => {
            const c = routeCondition("admin-read", "ResolvedRefs");
            return c?.startsWith("True|") ? c : undefined;
          },
          90_000,
          500,
        );
        // the new config is on the proxies (the backend no longer answers 500, unresolved)
        await eventually(
          "the proxies running the opt-in",
          async () => {
            const r = await send(address, `admin.${TENANT_DOMAIN}`, "/canary0/first");
            return r.status !== 500 ? r : undefined;
          },
          90_000,
          250,
        );
        await armCanaries();
        const probes = await adminProbes([...ADMIN_HOSTS, `admin.${TENANT_DOMAIN}`]);
        const canary = await send(address, `admin.${TENANT_DOMAIN}`, "/canary0/x");
        // the proxies' own ports on the pod: readiness, management, error responder
        const own: Reply[] = [];
        for (const [i, port] of OWN_PORTS.entries()) {
          applyItems([
            xbackend(`own-${i}`, loopbackNames[0]!, port),
            route(`own-${i}`, [`own-${i}.${TENANT_DOMAIN}`], [{ backendRefs: [xref(`own-${i}`)] }]),
          ]);
          await eventually(
            `own-${i} accepted`,
            () => {
              const c = routeCondition(`own-${i}`, "ResolvedRefs");
              return c?.startsWith("True|") ? c : undefined;
            },
            60_000,
            500,
          );
          own.push(
            await eventually(
              `own-${i} answered by the proxy`,
              async () => {
                const r = await send(address, `own-${i}.${TENANT_DOMAIN}`, "/ready");
                return r.status === 404 ? undefined : r;
              },
              30_000,
              250,
            ),
          );
        }
        const answered = adminAnswers(probes);
        expect(answered).toEqual([]);
        // the route's hostnames get the guard's 502; other Host spellings match no route (404)
        const routed = (h: string) =>
          ["localhost", `admin.${TENANT_DOMAIN}`].includes(h.replace(/:\d+$/, ""));
        expect(
          probes
            .filter(p => p.reply.status !== (routed(p.host) ? 502 : 404))
            .map(p => `${p.host} ${p.path}: ${p.reply.status}`),
        ).toEqual([]);
        expect(canary.status).toBe(502);
        expect(own.map(r => r.status)).toEqual(OWN_PORTS.map(() => 502));
        expect(canaryHits()).toEqual([]);
        return {
          resolved,
          statuses: [...new Set(probes.map(p => p.reply.status))],
          ownPorts: own.map(r => r.status),
        };
      },
      r => r,
    );
  }, 300_000);

  it("a RequestHeaderModifier setting Host: localhost:2019 on a tenant hostname reaches no admin API", async () => {
    await withPlatformTraffic(
      "Host rewrite to localhost:2019",
      async () => {
        applyItems([
          route(
            "host-rewrite",
            [`rewrite.${TENANT_DOMAIN}`],
            [
              {
                filters: [
                  {
                    type: "RequestHeaderModifier",
                    requestHeaderModifier: { set: [{ name: "Host", value: "localhost:2019" }] },
                  },
                ],
                backendRefs: [xref("admin-0")],
              },
              {
                matches: [{ path: { type: "PathPrefix", value: "/canary" } }],
                filters: [
                  {
                    type: "RequestHeaderModifier",
                    requestHeaderModifier: { set: [{ name: "Host", value: "localhost:2019" }] },
                  },
                ],
                backendRefs: [xref("canary-0")],
              },
            ],
          ),
        ]);
        const accepted = await eventually(
          "host-rewrite's Accepted",
          () => routeCondition("host-rewrite", "Accepted"),
          90_000,
          500,
        );
        await eventually(
          "host-rewrite served",
          async () => {
            const r = await send(address, `rewrite.${TENANT_DOMAIN}`, "/config/");
            return r.status === 404 ? undefined : r;
          },
          30_000,
          250,
        );
        const probes = await adminProbes([`rewrite.${TENANT_DOMAIN}`]);
        const canary = await send(address, `rewrite.${TENANT_DOMAIN}`, "/canary");
        expect(adminAnswers(probes)).toEqual([]);
        expect(canary.status).toBe(502);
        expect(canaryHits()).toEqual([]);
        return { accepted, statuses: [...new Set(probes.map(p => p.reply.status))] };
      },
      r => r,
    );
  }, 300_000);

  it("a RequestMirror and an ExternalAuth filter aimed at a loopback-resolving name send nothing there", async () => {
    await withPlatformTraffic(
      "RequestMirror and ExternalAuth to a loopback-resolving XBackend",
      async () => {
        applyItems([
          route(
            "mirror",
            [`mirror.${TENANT_DOMAIN}`],
            [
              {
                filters: [
                  {
                    type: "RequestMirror",
                    requestMirror: { backendRef: xref("canary-0") },
                  },
                  {
                    type: "RequestMirror",
                    requestMirror: { backendRef: xref("admin-0") },
                  },
                ],
                backendRefs: [{ name: "echo", port: 8080 }],
              },
            ],
          ),
          {
            apiVersion: GWAPI,
            kind: "ListenerSet",
            metadata: { name: "auth-loopback", namespace: tenant },
            spec: {
              parentRef: { name: GW, namespace: platform },
              listeners: [
                {
                  name: "auth",
                  port: 80,
                  protocol: "HTTP",
                  hostname: `auth-loopback.${TENANT_DOMAIN}`,
                  filters: {
                    requests: [
                      {
                        type: "ExternalAuth",
                        externalAuth: {
                          protocol: "HTTP",
                          backendRef: xref("canary-0"),
                          http: {},
                        },
                      },
                    ],
                  },
                },
              ],
            },
          },
          {
            apiVersion: GWAPI,
            kind: "HTTPRoute",
            metadata: { name: "auth-loopback", namespace: tenant },
            spec: {
              parentRefs: [
                { kind: "ListenerSet", group: "gateway.networking.k8s.io", name: "auth-loopback" },
              ],
              rules: [{ backendRefs: [{ name: "echo", port: 8080 }] }],
            },
          },
        ]);
        const mirrored = await eventually(
          "the mirrored route served by echo",
          async () => {
            const r = await send(
              address,
              `mirror.${TENANT_DOMAIN}`,
              "/mirrored",
              "POST",
              '{"secret":"client body"}',
            );
            return r.status === 200 ? r : undefined;
          },
          90_000,
          250,
        );
        const sent: number[] = [];
        for (let i = 0; i < 20; i++)
          sent.push(
            (
              await send(
                address,
                `mirror.${TENANT_DOMAIN}`,
                `/mirrored/${i}`,
                "POST",
                HARMLESS_LOAD,
              )
            ).status,
          );
        const auth = await eventually(
          "the ExternalAuth listener answers",
          async () => {
            const r = await send(address, `auth-loopback.${TENANT_DOMAIN}`, "/");
            return r.status === 404 || r.status === 0 ? undefined : r;
          },
          90_000,
          250,
        );
        const authStatuses: number[] = [];
        for (let i = 0; i < 10; i++)
          authStatuses.push(
            (await send(address, `auth-loopback.${TENANT_DOMAIN}`, `/x${i}`)).status,
          );
        expect(mirrored.status).toBe(200);
        expect(sent.every(s => s === 200)).toBe(true);
        // nothing approved the request: it is refused, never passed on
        expect(authStatuses.every(s => s >= 400 && s !== 404)).toBe(true);
        expect(canaryHits()).toEqual([]);
        return {
          mirroredStatuses: [...new Set(sent)],
          authStatus: auth.status,
          authStatuses: [...new Set(authStatuses)],
        };
      },
      r => r,
    );
  }, 300_000);

  it("HTTP-01 for the platform's names through a tenant ListenerSet listener and tenant Secrets is never answered", async () => {
    await withPlatformTraffic(
      "HTTP-01 for another team's names (tenant ListenerSet + Secret)",
      async () => {
        const token = "tenant-token-0123456789";
        const keyAuthorization = `${token}.tenant-account-thumbprint`;
        const ordersBefore = pebble!.orders();
        applyItems([
          ...[WWW, SECURE].map(name => ({
            apiVersion: "v1",
            kind: "Secret",
            metadata: {
              name: acmeSecretName(name),
              namespace: tenant,
              annotations: {
                [AcmeAnnotation.name]: name,
                [AcmeAnnotation.state]: "Pending",
                [AcmeAnnotation.challenges]: JSON.stringify({ [token]: keyAuthorization }),
              },
            },
            type: "Opaque",
          })),
          {
            apiVersion: GWAPI,
            kind: "ListenerSet",
            metadata: { name: "steal", namespace: tenant },
            spec: {
              parentRef: { name: GW, namespace: platform },
              listeners: [WWW, SECURE].map((hostname, i) => ({
                name: `steal-${i}`,
                port: 443,
                protocol: "HTTPS",
                hostname,
                tls: { mode: "Terminate", options: { [ACME_ISSUER_OPTION]: "pebble" } },
              })),
            },
          },
        ]);
        // the controller has read the ListenerSet (its listeners have conditions)
        const conditions = await eventually(
          "the tenant ListenerSet's listener conditions",
          () => {
            const c = jsonpath(
              ["get", "listenerset", "steal", "-n", tenant],
              "{range .status.listeners[*]}{.name}:{.conditions[?(@.type=='ResolvedRefs')].status}/{.conditions[?(@.type=='ResolvedRefs')].reason} {end}",
            );
            return /steal-0:\S+ steal-1:\S+/.test(c) ? c : undefined;
          },
          90_000,
          500,
        );
        // and pushed what it makes of it: the Gateway is programmed for its current inputs
        const replies: Reply[] = [];
        for (let round = 0; round < 20; round++)
          for (const name of [WWW, SECURE])
            replies.push(await send(address, name, `/.well-known/acme-challenge/${token}`));
        const served = replies.filter(r => r.body.includes(keyAuthorization));
        expect(served).toEqual([]);
        expect(conditions).not.toMatch(/steal-\d:True/);
        expect(pebble!.orders()).toBe(ordersBefore);
        return {
          listenerConditions: conditions,
          statuses: [...new Set(replies.map(r => r.status))],
        };
      },
      r => r,
    );
  }, 300_000);

  it("a tenant-owned Gateway in the shared class gets no issuer: its own spec.acme is refused, the class's is not granted", async () => {
    await withPlatformTraffic(
      "tenant-owned Gateway in the shared class (ACME issuers)",
      async () => {
        // an https URL of the tenant's choice, with its own CA (what the CRD admits)
        const pem = selfSigned(dir, "tenant-acme", ["-addext", "subjectAltName=IP:127.0.0.1"]);
        const fetched = await hostCanary("127.0.0.1", "{}", {
          cert: pem,
          key: readFileSync(join(dir, "tenant-acme.key"), "utf8"),
        });
        try {
          const ordersBefore = pebble!.orders();
          const own = (name: string, paramsName: string | undefined, issuer: string) => ({
            apiVersion: GWAPI,
            kind: "Gateway",
            metadata: { name, namespace: tenant },
            spec: {
              gatewayClassName: cls,
              ...(paramsName && {
                infrastructure: {
                  parametersRef: {
                    group: "gateway.kengine.io",
                    kind: "KengineParameters",
                    name: paramsName,
                  },
                },
              }),
              listeners: [
                { name: "http", protocol: "HTTP", port: 80 },
                {
                  name: "https",
                  protocol: "HTTPS",
                  port: 443,
                  hostname: `own.${TENANT_DOMAIN}`,
                  tls: { mode: "Terminate", options: { [ACME_ISSUER_OPTION]: issuer } },
                },
              ],
            },
          });
          // 1. the tenant's own issuer, naming a URL of its choice: refused
          const tenantParams = {
            apiVersion: "gateway.kengine.io/v1alpha1",
            kind: "KengineParameters",
            metadata: { name: "mine", namespace: tenant },
            spec: {
              proxy: { replicas: 1 },
              acme: {
                issuers: [
                  {
                    name: "mine",
                    server: `https://127.0.0.1:${fetched.port}/directory`,
                    email: "t@example.com",
                    caBundle: pem,
                  },
                ],
              },
            },
          };
          const applied = kubectl(
            ["apply", "-f", "-"],
            JSON.stringify({
              apiVersion: "v1",
              kind: "List",
              items: [tenantParams, own("own", "mine", "mine")],
            }),
          );
          let ownVerdict = `refused at admission: ${applied.stderr.trim()}`;
          if (applied.code === 0) {
            ownVerdict = await eventually(
              "the tenant Gateway's Accepted condition",
              () => {
                const c = jsonpath(
                  ["get", "gateway", "own", "-n", tenant],
                  "{.status.conditions[?(@.type=='Accepted')].status}|{.status.conditions[?(@.type=='Accepted')].reason}|{.status.conditions[?(@.type=='Accepted')].message}",
                );
                return c.includes("|") && c !== "||" ? c : undefined;
              },
              90_000,
              500,
            );
          }
          // 2. the class's issuer, not granted to the tenant's namespace
          kubectl(["delete", "gateway", "own", "-n", tenant, "--ignore-not-found", "--wait=true"]);
          applyItems([
            { ...tenantParams, spec: { proxy: { replicas: 1 } } },
            own("own-class", "mine", "pebble"),
          ]);
          const listener = await eventually(
            "the tenant Gateway's ACME listener condition",
            () => {
              const c = jsonpath(
                ["get", "gateway", "own-class", "-n", tenant],
                "{.status.listeners[?(@.name=='https')].conditions[?(@.type=='ResolvedRefs')].status}|{.status.listeners[?(@.name=='https')].conditions[?(@.type=='ResolvedRefs')].message}",
              );
              return /^(True|False)\|/.test(c) ? c : undefined;
            },
            120_000,
            500,
          );
          kubectl([
            "delete",
            "gateway",
            "own-class",
            "-n",
            tenant,
            "--ignore-not-found",
            "--wait=false",
          ]);
          expect(applied.code === 0 ? ownVerdict : "refused").toMatch(
            /^(refused|False\|InvalidParameters)/,
          );
          expect(listener).toMatch(/^False\|/);
          expect(pebble!.orders()).toBe(ordersBefore);
          expect(fetched.hits).toEqual([]);
          return { ownIssuer: ownVerdict, classIssuer: listener };
        } finally {
          await fetched.close();
        }
      },
      r => r,
    );
  }, 300_000);

  it("an upload far beyond the ExternalAuth cap leaves the proxies' memory bounded", async () => {
    await withPlatformTraffic(
      "128 MiB upload through an ExternalAuth listener at the largest admitted forwardBody.maxSize",
      async () => {
        const listenerSet = (maxSize: number) => ({
          apiVersion: GWAPI,
          kind: "ListenerSet",
          metadata: { name: "auth", namespace: tenant },
          spec: {
            parentRef: { name: GW, namespace: platform },
            listeners: [
              {
                name: "auth",
                port: 80,
                protocol: "HTTP",
                hostname: `auth.${TENANT_DOMAIN}`,
                filters: {
                  requests: [
                    {
                      type: "ExternalAuth",
                      externalAuth: {
                        protocol: "HTTP",
                        backendRef: { name: "echo", port: 8080 },
                        http: {},
                        forwardBody: { maxSize },
                      },
                    },
                  ],
                },
              },
            ],
          },
        });
        // The largest cap the tenant gets admitted: the CRD's maximum, else the class limit's
        // maximum, else the default class limit.
        const tried: { maxSize: number; verdict: string }[] = [];
        let admitted: number | undefined;
        for (const maxSize of [2 ** 31 - 1, 16 * 1024 * 1024, 65536]) {
          const r = kubectl(["apply", "-f", "-"], JSON.stringify(listenerSet(maxSize)));
          tried.push({
            maxSize,
            verdict: r.code === 0 ? "admitted" : r.stderr.trim().slice(0, 300),
          });
          if (r.code === 0) {
            admitted = maxSize;
            break;
          }
        }
        expect(admitted).toBeDefined();
        applyItems([
          {
            apiVersion: GWAPI,
            kind: "HTTPRoute",
            metadata: { name: "upload", namespace: tenant },
            spec: {
              parentRefs: [
                { kind: "ListenerSet", group: "gateway.networking.k8s.io", name: "auth" },
              ],
              rules: [{ backendRefs: [{ name: "echo", port: 8080 }] }],
            },
          },
        ]);
        const listener = await eventually(
          "the auth listener's conditions",
          () => {
            const c = jsonpath(
              ["get", "listenerset", "auth", "-n", tenant],
              "{.status.listeners[0].conditions[?(@.type=='Accepted')].status}|{.status.listeners[0].conditions[?(@.type=='Accepted')].message}",
            );
            return c.includes("|") && c !== "|" ? c : undefined;
          },
          90_000,
          500,
        );
        if (listener.startsWith("True|"))
          await eventually(
            "the auth listener served",
            async () => {
              const r = await send(address, `auth.${TENANT_DOMAIN}`, "/");
              return r.status === 200 ? r : undefined;
            },
            60_000,
            250,
          );
        const pods = proxyPods(platform, GW).filter(p => !p.deleting);
        const pids = pods.flatMap(p => caddyPidsOfPod(p.uid));
        expect(pids).toHaveLength(REPLICAS);
        const before = pids.map(memoryOf);
        const t0 = Date.now();
        const reply = await upload(address, `auth.${TENANT_DOMAIN}`, UPLOAD_BYTES);
        const uploadMs = Date.now() - t0;
        const after = pids.map(memoryOf);
        const growth = after.map((a, i) => Math.round((a.peakMiB - before[i]!.peakMiB) * 10) / 10);
        figures.upload = {
          bytes: UPLOAD_BYTES,
          admittedMaxSize: admitted,
          tried,
          status: reply.status,
          uploadS: seconds(uploadMs),
          before,
          after,
          peakGrowthMiB: growth,
        };
        // no proxy container restarted, none was OOM-killed (the limit is the node's cgroup's)
        const restarts = pods.map(p => {
          const status = JSON.parse(
            kubectlOk([
              "get",
              "pod",
              "-n",
              platform,
              p.name,
              "-o",
              "jsonpath={.status.containerStatuses[?(@.name=='proxy')]}",
            ]),
          ) as { restartCount: number; lastState?: { terminated?: { reason?: string } } };
          return { restarts: status.restartCount, last: status.lastState?.terminated?.reason };
        });
        (figures.upload as Record<string, unknown>).memoryLimit = PROXY_MEMORY_LIMIT;
        (figures.upload as Record<string, unknown>).proxyRestarts = restarts;
        // 2^31−1 is above every class limit: refused at admission
        expect(tried[0]!.verdict).not.toBe("admitted");
        expect(Math.max(...growth)).toBeLessThan(UPLOAD_PEAK_BOUND_MIB);
        expect(restarts).toEqual(pods.map(() => ({ restarts: 0, last: undefined })));
        return figures.upload as object;
      },
      r => r,
    );
  }, 300_000);

  it(`a tenant namespace with ${BULK_CONFIGMAPS} ConfigMaps of 1 MiB leaves the controller's RSS within ${CONTROLLER_RSS_BOUND_MIB} MiB`, async () => {
    await withPlatformTraffic(
      `${BULK_CONFIGMAPS} ConfigMaps of 1 MiB in a tenant namespace`,
      async () => {
        bulk = createNamespace("tb-bulk");
        const pid = controllerPid();
        const before = memoryOf(pid);
        const m0 = await controllerMetrics();
        const data = "x".repeat(BULK_BYTES);
        const t0 = Date.now();
        let peak = before.rssMiB;
        const sampler = setInterval(() => (peak = Math.max(peak, memoryOf(pid).rssMiB)), 500);
        try {
          await createAll(
            Array.from({ length: BULK_CONFIGMAPS }, (_, i) => ({
              apiVersion: "v1",
              kind: "ConfigMap",
              metadata: { name: `bulk-${i}`, namespace: bulk! },
              data: { blob: data },
            })),
            4,
          );
        } finally {
          clearInterval(sampler);
        }
        const createMs = Date.now() - t0;
        // The controller is past them: a route created after the last one is accepted, then its
        // memory settles.
        await routeAccepted("after-bulk");
        let last = memoryOf(pid).rssMiB;
        const settled = await eventually(
          "the controller's RSS to settle (two readings 5 s apart within 1 MiB)",
          async () => {
            await new Promise(r => setTimeout(r, 5000));
            const now = memoryOf(pid);
            peak = Math.max(peak, now.rssMiB);
            const steady = Math.abs(now.rssMiB - last) < 1;
            last = now.rssMiB;
            return steady ? now : undefined;
          },
          120_000,
          0,
        );
        const m1 = await controllerMetrics();
        const heap = (m: typeof m0) =>
          Math.round(
            ((m.value("kengine_gateway_heap_bytes", 'kind="used"') ?? NaN) / 2 ** 20) * 10,
          ) / 10;
        const growth = Math.round((settled.rssMiB - before.rssMiB) * 10) / 10;
        figures.bulkConfigMaps = {
          count: BULK_CONFIGMAPS,
          bytesEach: BULK_BYTES,
          createS: seconds(createMs),
          totalS: seconds(Date.now() - t0),
          rssBeforeMiB: before.rssMiB,
          rssAfterMiB: settled.rssMiB,
          rssPeakMiB: peak,
          rssGrowthMiB: growth,
          heapUsedBeforeMiB: heap(m0),
          heapUsedAfterMiB: heap(m1),
          configMapsCached: m1.value("kengine_gateway_cache_objects", 'kind="ConfigMap"'),
        };
        // gone before the next case counts what the controller holds
        kubectl(["delete", "namespace", bulk, "--wait=true", "--timeout=180s"]);
        expect(growth).toBeLessThan(CONTROLLER_RSS_BOUND_MIB);
        return figures.bulkConfigMaps as object;
      },
      r => r,
    );
  }, 600_000);

  it(`${CYCLES} create/delete cycles of tenant objects leave the ingest layer's memory flat`, async () => {
    await withPlatformTraffic(
      `${CYCLES} create/delete cycles of tenant ConfigMaps and Secrets`,
      async () => {
        /** The ingest layer's count of remembered objects, if the controller exposes one. */
        const remembered = async (): Promise<{ name: string; value: number } | undefined> => {
          const m = await controllerMetrics();
          const name = /^(kengine_gateway_ingest_\w*(?:seen|remembered|known|tracked)\w*)/m.exec(
            m.text,
          )?.[1];
          const value = name ? m.value(name) : undefined;
          return name && value !== undefined ? { name, value } : undefined;
        };
        /** What the controller holds: its heap, and Secrets/ConfigMaps in its snapshot. */
        const held = async () => {
          const m = await controllerMetrics();
          return {
            heapUsedMiB:
              Math.round(
                ((m.value("kengine_gateway_heap_bytes", 'kind="used"') ?? NaN) / 2 ** 20) * 10,
              ) / 10,
            configMaps: m.value("kengine_gateway_cache_objects", 'kind="ConfigMap"'),
            secrets: m.value("kengine_gateway_cache_objects", 'kind="Secret"'),
          };
        };
        const pid = controllerPid();
        const before = await remembered();
        const heldBefore = await held();
        const rssBefore = memoryOf(pid);
        const t0 = Date.now();
        const BATCH = 100;
        for (let b = 0; b < CYCLES / BATCH; b++) {
          await createAll(
            Array.from({ length: BATCH }, (_, i) => ({
              apiVersion: "v1",
              kind: i % 2 === 0 ? "ConfigMap" : "Secret",
              metadata: {
                name: `cycle-${b}-${i}-${"n".repeat(200)}`,
                namespace: tenant,
                labels: { "tb-cycle": String(b) },
              },
              data: { v: i % 2 === 0 ? "x" : "eA==" },
            })),
            8,
          );
          deleteCollection(tenant, "configmaps", `tb-cycle=${b}`);
          deleteCollection(tenant, "secrets", `tb-cycle=${b}`);
        }
        const cyclesMs = Date.now() - t0;
        // the controller is past the last deletion: a route created after it is accepted
        await routeAccepted("after-cycles");
        const heldAfter = await eventually(
          "the snapshot's Secrets and ConfigMaps back where they were",
          async () => {
            const h = await held();
            return h.configMaps === heldBefore.configMaps && h.secrets === heldBefore.secrets
              ? h
              : undefined;
          },
          60_000,
          1000,
        ).catch(() => held());
        const after = await remembered();
        const rssAfter = memoryOf(pid);
        figures.cycles = {
          cycles: CYCLES,
          cyclesS: seconds(cyclesMs),
          rememberedMetric: before?.name ?? "none exposed",
          rememberedBefore: before?.value,
          rememberedAfter: after?.value,
          heldBefore,
          heldAfter,
          rssBeforeMiB: rssBefore.rssMiB,
          rssAfterMiB: rssAfter.rssMiB,
        };
        // the deleted objects are gone from the snapshot
        expect({ configMaps: heldAfter.configMaps, secrets: heldAfter.secrets }).toEqual({
          configMaps: heldBefore.configMaps,
          secrets: heldBefore.secrets,
        });
        if (before && after) {
          // flat: what ingest remembers after the cycles is what it remembered before (objects of
          // the cluster's own, e.g. Leases and Events, may come and go meanwhile)
          expect(after.value - before.value).toBeLessThan(50);
        } else {
          // No count exposed: the heap bounds what 2,000 names kept would add, with the noise of
          // a heap read without a forced collection.
          expect(heldAfter.heapUsedMiB - heldBefore.heapUsedMiB).toBeLessThan(
            CYCLES_HEAP_BOUND_MIB,
          );
        }
        return figures.cycles as object;
      },
      r => r,
    );
  }, 600_000);

  it(`a silent watch is recovered within ${SILENT_WATCH_BOUND_S} s: a route created while every connection is half-open is served`, async () => {
    await withPlatformTraffic(
      "silent watch (every connection of the controller to the API server half-open)",
      async () => {
        const pidBefore = controllerPid();
        const m0 = await controllerMetrics();
        const watchesBefore = m0.value("kengine_gateway_watch_requests_total");
        const frozen = await relay!.command("freeze");
        const t0 = Date.now();
        applyItems([
          route(
            "late",
            [`late.${TENANT_DOMAIN}`],
            [{ backendRefs: [{ name: "echo", port: 8080 }] }],
          ),
        ]);
        const served = await eventually(
          "the route created during the silence served",
          async () => {
            const r = await get(address, `late.${TENANT_DOMAIN}`, "/");
            return r.status === 200 ? r : undefined;
          },
          (SILENT_WATCH_BOUND_S + RELIST_AND_PUSH_S + 30) * 1000,
          500,
        ).then(
          () => Date.now() - t0,
          () => undefined,
        );
        const released = await relay!.command("release");
        const m1 = await controllerMetrics();
        figures.silentWatch = {
          connectionsFrozen: frozen,
          connectionsReleased: released,
          servedAfterS: served === undefined ? "not within the wait" : seconds(served),
          watchRequestsBefore: watchesBefore,
          watchRequestsAfter: m1.value("kengine_gateway_watch_requests_total"),
          silentRestarts: m1.value("kengine_gateway_watch_restarts_total", 'cause="silent"'),
          controllerPidBefore: pidBefore,
          controllerPidAfter: controllerPid(),
        };
        expect(frozen).toBeGreaterThan(0);
        // recovered by the watch, not by a new controller process
        expect(controllerPid()).toBe(pidBefore);
        expect(served).toBeDefined();
        expect(served!).toBeLessThanOrEqual((SILENT_WATCH_BOUND_S + RELIST_AND_PUSH_S) * 1000);
        return figures.silentWatch as object;
      },
      r => r,
    );
  }, 400_000);

  it("no canary inside a proxy pod saw a request, in the whole suite", () => {
    figures.canaryHits = canaryHits().length;
    expect(canaryHits()).toEqual([]);
  });
});
