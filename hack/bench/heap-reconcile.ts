/**
 * Heap held by the real controller loop as one Gateway grows route by route:
 * `node --expose-gc --import tsx hack/bench/heap-reconcile.ts [routes] [checkpoints] [snapshotDir]`
 * runs the Reconciler (ingest → dirty set → translate → render → push → status queue) against
 * an in-process API server: list/watch answered from memory, provisioning applies and status
 * writes stored and delivered back as watch events (as the API server does, with a new
 * resourceVersion and the managedFields it records), the election's Lease among them. Routes (hack/bench/workload.ts) are created one add event at
 * a time, each letting the build and status writes it causes run. At each checkpoint (default
 * 500,1000,2000) it prints the heap used after full garbage collections (MiB) and, with a
 * snapshot directory, writes a heap snapshot there (read it with heap-holders.ts).
 */
import { ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeHeapSnapshot } from "node:v8";
import { heapUsedMiB } from "./heap-used";

heapUsedMiB(); // fails early without --expose-gc

const routes = Number(process.argv[2] ?? 2000);
const checkpoints = (process.argv[3] ?? "500,1000,2000").split(",").map(Number);
const snapshotDir = process.argv[4];
/** Creates per second without waiting for the controller (HEAP_RATE); 0: one at a time. */
const rate = Number(process.env.HEAP_RATE ?? 0);

type Stored = Map<
  string,
  Map<string, { metadata: Record<string, unknown> } & Record<string, unknown>>
>;

/**
 * The Gateway's one proxy pod: a real Bundled Caddy (hack/build-peers.sh) started from the
 * bootstrap ConfigMap and the serving Secret the controller provisioned, on 127.0.0.1 with the
 * pod's ports, published by an EndpointSlice of the admin Service. Its ports (19443, 80) and its
 * admin socket (/tmp/kengine-admin.sock) are the pod's, so it runs only in a network namespace
 * of its own with a private /etc/kengine (see docs/bench.md: `unshare -n -m`); the socket is
 * replaced at each start.
 */
async function startProxy(
  stored: Stored,
  store: (kind: "EndpointSlice", o: never) => unknown,
): Promise<ChildProcess> {
  const { peerBin } = await import("../peers");
  const {
    BOOTSTRAP_FILE,
    MANAGEMENT_TLS_DIR,
    DEFAULT_MANAGEMENT_PORT,
    bootstrapConfigMapName,
    managementSecretName,
  } = await import("../../capabilities/workload/pod");
  const { proxyNames } = await import("../../capabilities/provision/names");
  const secret = stored.get("Secret")!.get(`bench/${managementSecretName("gw0")}`) as
    | { data?: Record<string, string> }
    | undefined;
  const bootstrap = stored.get("ConfigMap")!.get(`bench/${bootstrapConfigMapName("gw0")}`) as
    | { data?: Record<string, string> }
    | undefined;
  if (!secret?.data || !bootstrap?.data?.[BOOTSTRAP_FILE])
    throw new Error(
      `the controller provisioned no management Secret or bootstrap ConfigMap: ${[...stored.get("Secret")!.keys(), ...stored.get("ConfigMap")!.keys()].join(", ")}`,
    );
  mkdirSync(MANAGEMENT_TLS_DIR, { recursive: true });
  for (const [k, v] of Object.entries(secret.data))
    writeFileSync(join(MANAGEMENT_TLS_DIR, k), Buffer.from(v, "base64"));
  const dir = mkdtempSync(join(tmpdir(), "kg-heap-caddy-"));
  writeFileSync(join(dir, BOOTSTRAP_FILE), bootstrap.data[BOOTSTRAP_FILE]);
  const caddy = spawn(peerBin("caddy"), ["run", "--config", join(dir, BOOTSTRAP_FILE)], {
    env: {
      ...process.env,
      KENGINE_POD_IP: "127.0.0.1",
      XDG_CONFIG_HOME: join(dir, "config"),
      XDG_DATA_HOME: join(dir, "data"),
      HOME: dir,
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  process.once("exit", () => caddy.exitCode === null && caddy.kill("SIGKILL"));
  let log = "";
  caddy.stderr!.on("data", (c: Buffer) => (log = (log + c.toString()).slice(-4000)));
  caddy.on("exit", code => code && console.error(`caddy exited ${code}: ${log}`));
  store("EndpointSlice", {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: `${proxyNames("gw0").admin}-x1`,
      namespace: "bench",
      labels: { "kubernetes.io/service-name": proxyNames("gw0").admin },
    },
    addressType: "IPv4",
    ports: [{ name: "admin", port: DEFAULT_MANAGEMENT_PORT, protocol: "TCP" }],
    endpoints: [
      {
        addresses: ["127.0.0.1"],
        conditions: { ready: false },
        targetRef: { kind: "Pod", name: "gw0-proxy-0", uid: "pod-uid-0" },
      },
    ],
  } as never);
  return caddy;
}

async function main(): Promise<void> {
  const { Reconciler } = await import("../../capabilities/reconcile");
  const { LIST_PATHS } = await import("../../capabilities/snapshot/kinds");
  const { KINDS } = await import("../../capabilities/snapshot");
  const { DEFAULT_PROXY_SETTINGS } = await import("../../capabilities/provision");
  const { gatewayClass, gateways, httpRoute, services } = await import("./workload");
  type Kind = (typeof KINDS)[number];
  type Obj = {
    kind?: string;
    apiVersion?: string;
    metadata: Record<string, unknown> & { name: string; namespace?: string };
    [k: string]: unknown;
  };

  const kindOfPlural = new Map<string, Kind>(
    KINDS.map(k => [LIST_PATHS[k].split("/").pop()!, k] as const),
  );
  let rv = 1;
  /** What the API server stores, by kind and "namespace/name". */
  const stored = new Map<Kind, Map<string, Obj>>(KINDS.map(k => [k, new Map()]));
  const notFound = (what: string) => Object.assign(new Error(`404 ${what}`), { status: 404 });
  const managedFields = (manager: string) => [
    {
      manager,
      operation: "Update",
      apiVersion: "gateway.networking.k8s.io/v1",
      time: new Date().toISOString(),
      fieldsType: "FieldsV1",
      fieldsV1: { "f:spec": { ".": {}, "f:hostnames": {}, "f:parentRefs": {}, "f:rules": {} } },
    },
    {
      manager: "kengine-gateway",
      operation: "Update",
      subresource: "status",
      apiVersion: "gateway.networking.k8s.io/v1",
      time: new Date().toISOString(),
      fieldsType: "FieldsV1",
      fieldsV1: { "f:status": { ".": {}, "f:parents": {} } },
    },
  ];
  let deliver: (kind: Kind, o: Obj) => void = () => {};
  /** Stores an object as the API server does and delivers it as a watch event (a fresh parse). */
  const store = (kind: Kind, o: Obj): Obj => {
    const key = o.metadata.namespace
      ? `${o.metadata.namespace}/${o.metadata.name}`
      : o.metadata.name;
    const before = stored.get(kind)!.get(key);
    const next: Obj = {
      ...before,
      ...o,
      metadata: {
        uid: `uid-${kind}-${key}`,
        creationTimestamp: "2026-11-24T00:00:00Z",
        generation: 1,
        ...before?.metadata,
        ...o.metadata,
        resourceVersion: String(++rv),
        managedFields: managedFields("kubectl"),
      },
    };
    stored.get(kind)!.set(key, next);
    const text = JSON.stringify(next);
    setImmediate(() => deliver(kind, JSON.parse(text) as Obj));
    return next;
  };
  const parse = (path: string) => {
    const p = path.split("?")[0]!.split("/");
    // …/namespaces/<ns>/<plural>/<name>[/status] or …/<plural>/<name>[/status]
    const status = p[p.length - 1] === "status";
    if (status) p.pop();
    if (kindOfPlural.has(p[p.length - 1]!)) p.push(""); // a collection: the name is in the body
    const name = decodeURIComponent(p[p.length - 1]!);
    const plural = p[p.length - 2]!;
    const ns = p[p.length - 4] === "namespaces" ? decodeURIComponent(p[p.length - 3]!) : undefined;
    return { kind: kindOfPlural.get(plural), plural, name, namespace: ns, status };
  };
  let requests = 0;
  let lease: Obj | undefined;
  const kube = {
    async request<T>(method: string, path: string, body?: unknown): Promise<T> {
      requests++;
      if (process.env.HEAP_DEBUG) console.debug(method, path);
      await new Promise(r => setImmediate(r));
      for (const k of KINDS)
        if (method === "GET" && path.split("?")[0] === LIST_PATHS[k])
          return {
            metadata: { resourceVersion: String(rv) },
            items: [...stored.get(k)!.values()].map(o => JSON.parse(JSON.stringify(o)) as Obj),
          } as T;
      if (path.includes("customresourcedefinitions")) throw notFound(path);
      if (path.includes("/leases")) {
        // the election's Lease (election/kube-store.ts): create, read, apply
        if (method === "GET" && !lease) throw notFound(path);
        if (method !== "GET")
          lease = {
            ...(body as Obj),
            metadata: { ...(body as Obj).metadata, resourceVersion: String(++rv) },
          };
        return JSON.parse(JSON.stringify(lease)) as T;
      }
      const parsed = parse(path);
      const t = {
        ...parsed,
        name: parsed.name || ((body as Obj | undefined)?.metadata.name ?? ""),
      };
      const key = t.namespace ? `${t.namespace}/${t.name}` : t.name;
      if (method === "GET") {
        const o = t.kind && stored.get(t.kind)!.get(key);
        if (!o) throw notFound(path);
        return JSON.parse(JSON.stringify(o)) as T;
      }
      if (method === "DELETE") {
        if (t.kind) stored.get(t.kind)!.delete(key);
        return {} as T;
      }
      const b = (body ?? {}) as Obj;
      if (!t.kind) return b as T; // Deployments, PDBs, Events, …: not watched
      if (t.kind === "Secret" && (b as { stringData?: unknown }).stringData) {
        // the API server stores stringData as data
        const { stringData, ...rest } = b as Obj & { stringData: Record<string, string> };
        const data = Object.fromEntries(
          Object.entries(stringData).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
        );
        return store("Secret", {
          ...rest,
          data: { ...(rest.data as object), ...data },
          metadata: { ...rest.metadata, name: t.name },
        }) as T;
      }
      const before = stored.get(t.kind)!.get(key);
      if (t.status) {
        if (!before) throw notFound(path);
        return store(t.kind, {
          ...before,
          metadata: before.metadata,
          status: (b as { status?: unknown }).status,
        }) as T;
      }
      const merged =
        method === "PATCH" && before
          ? { ...before, ...b, metadata: { ...before.metadata, ...b.metadata } }
          : b;
      return store(t.kind, {
        ...merged,
        metadata: { ...merged.metadata, name: t.name },
      } as Obj) as T;
    },
  };
  const quiet = {
    info: () => {},
    warn: console.warn,
    error: console.error,
    debug: process.env.HEAP_DEBUG ? console.debug : () => {},
  };
  const reconciler = new Reconciler({
    kube,
    log: quiet,
    namespace: "pepr-system",
    identity: "heap-bench",
    // HEAP_TRAFFIC=<ms>: read the proxies' /metrics that often, as the deployed module does (15 s)
    trafficIntervalMs: Number(process.env.HEAP_TRAFFIC ?? 0),
    watch: false,
    defaults: { ...DEFAULT_PROXY_SETTINGS, replicas: 1 },
    election: { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 },
  });
  deliver = (kind, o) => reconciler.ingest(kind, "upsert", o as never);
  const opts = { routes, gateways: 1, namespace: "bench" };
  const initial = [
    {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "bench", labels: { "kubernetes.io/metadata.name": "bench" } },
    },
    gatewayClass(),
    ...gateways(opts),
    ...services(opts),
  ] as unknown as Obj[];
  for (const o of initial) store(o.kind as Kind, o);
  await reconciler.start();
  const leaderBy = Date.now() + 30_000;
  while (!reconciler.isLeader() && Date.now() < leaderBy) await new Promise(r => setTimeout(r, 50));
  if (!reconciler.isLeader()) throw new Error("never became leader");
  await reconciler.idle();
  const caddy = process.env.HEAP_PROXY ? await startProxy(stored, store) : undefined;
  if (caddy) {
    // the first push (a /load) before any route
    const by = Date.now() + 30_000;
    while (
      Date.now() < by &&
      reconciler.proxyStates().get("bench/gw0-proxy-0")?.phase !== "Programmed"
    )
      await new Promise(r => setTimeout(r, 100));
    console.log(JSON.stringify({ proxy: reconciler.proxyStates().get("bench/gw0-proxy-0") }));
  }
  const started = performance.now();
  const points: Record<string, unknown>[] = [{ routes: 0, heapMiB: heapUsedMiB() }];
  const out = snapshotDir ?? undefined;
  for (let i = 0; i < routes; i++) {
    const r = httpRoute(i, opts) as unknown as Obj;
    store("HTTPRoute", r);
    const n = i + 1;
    if (rate > 0) await new Promise(res => setTimeout(res, 1000 / rate));
    else {
      // one create at a time: its build and status writes run before the next
      await new Promise(res => setImmediate(res));
      await reconciler.idle();
    }
    if (checkpoints.includes(n)) {
      // under load (creates at `rate`): what is live while the controller catches up
      const loaded = rate > 0 ? heapUsedMiB() : undefined;
      await reconciler.idle();
      await new Promise(res => setTimeout(res, 1100)); // rate-limited Gateway status writes
      await reconciler.idle();
      const point: Record<string, unknown> = {
        routes: n,
        ...(loaded !== undefined && { loadedHeapMiB: loaded }),
        heapMiB: heapUsedMiB(),
        rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20),
        seconds: Math.round((performance.now() - started) / 100) / 10,
        requests,
      };
      const proxy = reconciler.proxyStates().get("bench/gw0-proxy-0");
      if (caddy)
        point.proxy = proxy && { phase: proxy.phase, desired: proxy.desiredHash.slice(0, 12) };
      if (out) point.snapshot = writeHeapSnapshot(join(out, `reconcile-${n}.heapsnapshot`));
      points.push(point);
      console.log(JSON.stringify(point));
    }
  }
  await reconciler.stop();
  if (caddy && caddy.exitCode === null) {
    const exited = new Promise(r => caddy.once("exit", r));
    caddy.kill("SIGKILL");
    await exited;
  }
  console.log(JSON.stringify({ routes, points }));
  process.exit(0);
}

main().catch(e => {
  console.error(e);
  process.exit(1);
});
