/**
 * The informer stage with a fake API server (lists only, no watches): start-up lists fill the
 * snapshot, a kind not served counts as empty and is reported, each take says whether
 * translation must run again, and changes are announced through `notify`.
 */
import { CONTROLLER_NAME } from "../ownership";
import { ChangeKind, KINDS, KubeObject } from "../snapshot";
import { LIST_PATHS } from "../snapshot/kinds";
import { Informer } from "./informer";
import { DEFAULT_RETRY, RetryDeps, StartError } from "./list";
import { ManualClock } from "./testing/manual-clock";

const quiet = { info() {}, warn() {}, error() {}, debug() {} };

const gateway = (name: string, rv: string): KubeObject =>
  ({
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "Gateway",
    metadata: { namespace: "ns", name, resourceVersion: rv, uid: `uid-${name}` },
    spec: {
      gatewayClassName: "kengine",
      listeners: [{ name: "http", port: 80, protocol: "HTTP" }],
    },
  }) as unknown as KubeObject;

const gatewayClass = {
  apiVersion: "gateway.networking.k8s.io/v1",
  kind: "GatewayClass",
  metadata: { name: "kengine", resourceVersion: "3", uid: "uid-class" },
  spec: { controllerName: CONTROLLER_NAME },
} as unknown as KubeObject;

function setup(
  opts: {
    items?: Partial<Record<string, readonly KubeObject[]>>;
    fail?: number;
    /** Whether XBackend is served (default: never). */
    served?: () => boolean;
  } = {},
) {
  const clock = new ManualClock(1_000);
  const notified: (ChangeKind | undefined)[] = [];
  let builds = 0;
  const kube = {
    request: async <T>(_method: string, path: string): Promise<T> => {
      const base = path.split("?")[0]!;
      if (base === LIST_PATHS.XBackend && !opts.served?.())
        throw Object.assign(new Error("not found"), { status: 404 });
      if (opts.fail !== undefined) throw Object.assign(new Error("nope"), { status: opts.fail });
      const kind = KINDS.find(k => LIST_PATHS[k] === base)!;
      return { items: opts.items?.[kind] ?? [], metadata: { resourceVersion: "10" } } as T;
    },
  };
  const informer = new Informer({
    kube,
    log: quiet,
    watch: false,
    retry: DEFAULT_RETRY,
    sleep: async () => {},
    stopped: () => false,
    notify: change => notified.push(change),
    requestBuild: () => builds++,
    timings: { now: () => clock.now(), received: () => {} },
  });
  const deps: RetryDeps = { sleep: async () => {}, random: () => 0, stopped: () => false };
  return { informer, notified, deps, builds: () => builds };
}

describe("informer stage", () => {
  it("has no output until every kind is listed", async () => {
    const { informer, deps } = setup({ items: { Gateway: [gateway("a", "5")] } });
    expect(informer.take()).toBeUndefined();
    await informer.start(DEFAULT_RETRY, deps);
    const out = informer.take()!;
    expect(out.translate).toBe(true);
    expect([...out.snapshot.objects.Gateway.keys()]).toEqual(["ns/a"]);
  });

  it("counts a kind the API server does not serve as empty, and reports it", async () => {
    const { informer, deps } = setup();
    await informer.start(DEFAULT_RETRY, deps);
    expect(informer.missingKinds).toEqual(["XBackend"]);
    expect(informer.synced).toBe(true);
    expect(informer.take()!.snapshot.objects.XBackend.size).toBe(0);
  });

  it("rejects with a StartError when a list is refused", async () => {
    const { informer, deps } = setup({ fail: 403 });
    await expect(informer.start(DEFAULT_RETRY, deps)).rejects.toBeInstanceOf(StartError);
  });

  it("takes the dirty set: translation again only after a change it reads", async () => {
    const { informer, deps, notified } = setup({
      items: { GatewayClass: [gatewayClass], Gateway: [gateway("a", "5")] },
    });
    await informer.start(DEFAULT_RETRY, deps);
    expect(informer.take()!.translate).toBe(true);
    expect(informer.take()!.translate).toBe(false);
    notified.length = 0;
    informer.ingest("Gateway", "upsert", gateway("b", "11"));
    expect(notified).toEqual(["config"]);
    const out = informer.take()!;
    expect(out.translate).toBe(true);
    expect(out.snapshot.objects.Gateway.has("ns/b")).toBe(true);
    // an event older than what the snapshot holds is dropped
    informer.ingest("Gateway", "upsert", gateway("b", "7"));
    expect(informer.take()!.translate).toBe(false);
  });

  it("an endpoint change of an Ingress backend of ours asks for a build; of another's, not", async () => {
    const cls = (name: string, controller: string) =>
      ({
        apiVersion: "networking.k8s.io/v1",
        kind: "IngressClass",
        metadata: { name, resourceVersion: "4" },
        spec: { controller },
      }) as unknown as KubeObject;
    const ingress = (name: string, className: string, service: string) =>
      ({
        apiVersion: "networking.k8s.io/v1",
        kind: "Ingress",
        metadata: { namespace: "team", name, resourceVersion: "5" },
        spec: {
          ingressClassName: className,
          defaultBackend: { service: { name: service, port: { number: 8080 } } },
        },
      }) as unknown as KubeObject;
    const slice = (service: string, rv: string) =>
      ({
        apiVersion: "discovery.k8s.io/v1",
        kind: "EndpointSlice",
        addressType: "IPv4",
        metadata: {
          namespace: "team",
          name: `${service}-x`,
          resourceVersion: rv,
          labels: { "kubernetes.io/service-name": service },
        },
        ports: [{ name: "", port: 3000 }],
        endpoints: [{ addresses: [`10.0.0.${rv}`], conditions: { ready: true } }],
      }) as unknown as KubeObject;
    const { informer, deps, notified } = setup({
      items: {
        GatewayClass: [gatewayClass],
        Gateway: [gateway("a", "5")],
        IngressClass: [
          cls("kengine", "kengine.io/ingress-controller"),
          cls("nginx", "k8s.io/ingress-nginx"),
        ],
        Ingress: [ingress("ours", "kengine", "echo"), ingress("theirs", "nginx", "other")],
      },
    });
    await informer.start(DEFAULT_RETRY, deps);
    informer.take();
    notified.length = 0;
    informer.ingest("EndpointSlice", "upsert", slice("echo", "11"));
    expect(notified).toEqual(["config"]);
    expect(informer.take()!.translate).toBe(true);
    notified.length = 0;
    informer.ingest("EndpointSlice", "upsert", slice("other", "12"));
    expect(notified).toEqual([]);
  });

  it("markAll makes the next take translate", async () => {
    const { informer, deps } = setup();
    await informer.start(DEFAULT_RETRY, deps);
    informer.take();
    informer.markAll();
    expect(informer.take()!.translate).toBe(true);
  });

  it("a kind served later is picked up at the next relist, and a build asked for", async () => {
    let served = false;
    const { informer, deps, builds } = setup({ served: () => served });
    await informer.start(DEFAULT_RETRY, deps);
    informer.take();
    await informer.relistMissing(DEFAULT_RETRY, deps);
    expect(informer.missingKinds).toEqual(["XBackend"]);
    expect(builds()).toBe(0);
    served = true;
    await informer.relistMissing(DEFAULT_RETRY, deps);
    expect(informer.missingKinds).toEqual([]);
    expect(builds()).toBe(1);
    expect(informer.take()!.translate).toBe(true);
  });
});
