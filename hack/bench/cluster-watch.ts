/**
 * Waiting on the local cluster for the cluster benchmarks (hack/bench/cluster.ts): routes
 * Accepted, Gateways programmed, proxy pods listed and serving a host.
 */
import { CONTROLLER, NS } from "./cluster-setup";
import { Kube } from "./kube";
import { now, sleep } from "./stats";
import { Agent, Pool, request } from "undici";

interface GatewayStatus {
  status?: {
    conditions?: { type: string; status: string; message?: string }[];
    listeners?: { attachedRoutes: number }[];
  };
}
interface RouteList {
  metadata: { resourceVersion: string };
  items: RouteObj[];
}
interface RouteObj {
  metadata: { name: string; generation?: number };
  status?: {
    parents?: {
      controllerName: string;
      parentRef: { name: string };
      conditions?: { type: string; status: string; observedGeneration?: number }[];
    }[];
  };
}

const accepted = (r: RouteObj, parent: string): boolean =>
  (r.status?.parents ?? []).some(
    p =>
      p.controllerName === CONTROLLER &&
      p.parentRef.name === parent &&
      (p.conditions ?? []).some(
        c =>
          c.type === "Accepted" &&
          c.status === "True" &&
          (c.observedGeneration ?? 0) >= (r.metadata.generation ?? 1),
      ),
  );

/**
 * Watches the HTTPRoutes carrying `label` and resolves (with the arrival time of the deciding
 * event) once `count` of them are Accepted by `parent`.
 */
export async function watchAccepted(
  kube: Kube,
  label: string,
  parent: string,
  count: number,
  timeoutMs: number,
): Promise<number> {
  const path = `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/httproutes?labelSelector=${encodeURIComponent(label)}`;
  const deadline = Date.now() + timeoutMs;
  const ok = new Set<string>();
  for (;;) {
    const list = await kube.ok<RouteList>("GET", path);
    ok.clear();
    for (const r of list.items) if (accepted(r, parent)) ok.add(r.metadata.name);
    if (ok.size >= count) return now();
    const res = await request(
      `${kube.auth.server}${path}&watch=1&allowWatchBookmarks=false&resourceVersion=${list.metadata.resourceVersion}&timeoutSeconds=${Math.max(1, Math.ceil((deadline - Date.now()) / 1000))}`,
      {
        dispatcher: watchAgent(kube),
        bodyTimeout: 0,
      },
    );
    let buf = "";
    for await (const chunk of res.body) {
      buf += chunk.toString();
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!line.trim()) continue;
        const ev = JSON.parse(line) as { type: string; object: RouteObj };
        if (ev.type === "ERROR") break;
        if (ev.type === "DELETED" || !accepted(ev.object, parent))
          ok.delete(ev.object.metadata.name);
        else ok.add(ev.object.metadata.name);
        if (ok.size >= count) {
          const t = now();
          res.body.destroy();
          return t;
        }
      }
    }
    if (Date.now() > deadline)
      throw new Error(`timed out: ${ok.size}/${count} routes Accepted by ${parent}`);
  }
}

let watchDispatcher: Agent | undefined;
const watchAgent = (kube: Kube): Agent =>
  (watchDispatcher ??= new Agent({
    connect: { ca: kube.auth.ca, cert: kube.auth.cert, key: kube.auth.key },
  }));
/** Closes the watches' connection pool (the run's clean-up). */
export const closeWatchAgent = async (): Promise<void> => {
  await watchDispatcher?.close();
};

export async function gatewayStatus(kube: Kube, name: string): Promise<GatewayStatus> {
  return kube.ok<GatewayStatus>(
    "GET",
    `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/gateways/${name}`,
  );
}

export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs: number,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    await sleep(everyMs);
  }
}

/** Waits until the Gateway's listener counts `routes` and `n` proxies run its current config. */
export async function gatewayReady(
  kube: Kube,
  name: string,
  routes: number,
  n: number,
  timeoutMs = 600_000,
): Promise<void> {
  await until(
    `${name}: ${routes} attached routes, ${n}/${n} proxies programmed`,
    async () => {
      const s = (await gatewayStatus(kube, name)).status;
      const attached = s?.listeners?.[0]?.attachedRoutes;
      const prog = s?.conditions?.find(c => c.type === "Programmed");
      return attached === routes &&
        prog?.status === "True" &&
        prog.message?.startsWith(`${n}/${n} proxies`)
        ? true
        : undefined;
    },
    timeoutMs,
    500,
  );
}

interface ProxyPod {
  readonly name: string;
  readonly ip: string;
}

export async function proxyPods(kube: Kube, gw: string): Promise<ProxyPod[]> {
  const list = await kube.ok<{
    items: {
      metadata: { name: string; deletionTimestamp?: string };
      status?: { podIP?: string; conditions?: { type: string; status: string }[] };
    }[];
  }>(
    "GET",
    `/api/v1/namespaces/${NS}/pods?labelSelector=${encodeURIComponent(`app.kubernetes.io/component=proxy,gateway.networking.k8s.io/gateway-name=${gw}`)}`,
  );
  return list.items
    .filter(
      p =>
        !p.metadata.deletionTimestamp &&
        p.status?.podIP &&
        p.status.conditions?.some(c => c.type === "Ready" && c.status === "True"),
    )
    .map(p => ({ name: p.metadata.name, ip: p.status!.podIP! }));
}

/**
 * Polls one proxy until `host` answers 200, with `parallel` request loops on their own
 * keep-alive connections (one loop alone manages only a few hundred requests/s here); each
 * loop starts a request at most every `gapMs`, so the poller stays under `parallel × 1000 /
 * gapMs` requests/s. Unbounded, the loops would take the cores from the controller and the
 * proxy they measure (a Bundled proxy's 404 for an unknown host is fast, so it would be polled
 * hardest; docs/bench.md, "The cluster run of 2026-11-24 evening"). Resolves with the time of
 * the first 200 and the number of requests sent.
 */
export async function pollUntilServed(
  pool: Pool,
  host: string,
  timeoutMs: number,
  parallel = 1,
  gapMs = 4,
): Promise<{ t: number; polls: number }> {
  const deadline = now() + timeoutMs;
  let polls = 0;
  let served: number | undefined;
  const loop = async (i: number) => {
    // staggered, so that together the loops look every gapMs / parallel
    await sleep((gapMs * i) / parallel);
    while (served === undefined) {
      const started = now();
      polls++;
      try {
        const res = await pool.request({ path: "/", method: "GET", headers: { host } });
        await res.body.dump();
        if (res.statusCode === 200) served ??= now();
      } catch {
        // the proxy closes idle connections on reload; try again
      }
      if (now() > deadline) throw new Error(`${host} not served after ${timeoutMs} ms`);
      const wait = started + gapMs - now();
      if (served === undefined && wait > 0) await sleep(wait);
    }
  };
  await Promise.all(Array.from({ length: parallel }, (_, i) => loop(i)));
  return { t: served!, polls };
}
