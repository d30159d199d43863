/**
 * The manager's orchestration with an in-memory Secret store (a fake of the API server, for the
 * bookkeeping only: issuance itself is proven against Pebble in tests/integration/acme-*):
 * settings that cannot work are written on the name's Secret once, with a back-off, and not
 * again until it has passed; nothing is ordered for a Gateway without an address.
 */
import { KubeClient } from "../kube/client";
import { KubeObject, snapshotOf } from "../snapshot";
import { ACME_ISSUER_OPTION, AcmeAnnotation, acmeSecretName } from "../validation/acme";
import { AcmeManager } from "./manager";

type Stored = {
  metadata: { name: string; namespace: string; annotations: Record<string, string> };
};

function fakeKube() {
  const secrets = new Map<string, Stored>();
  const calls: string[] = [];
  const kube: KubeClient = {
    request<T>(method: string, path: string, body?: unknown): Promise<T> {
      calls.push(`${method} ${path}`);
      const m = /^\/api\/v1\/namespaces\/([^/]+)\/secrets(?:\/([^/]+))?$/.exec(path);
      const key = m && m[2] ? `${m[1]}/${m[2]}` : undefined;
      const notFound = () => Promise.reject(Object.assign(new Error("not found"), { status: 404 }));
      if (method === "GET")
        return key && secrets.has(key) ? Promise.resolve(secrets.get(key) as T) : notFound();
      if (method === "POST") {
        const b = body as Stored;
        secrets.set(`${b.metadata.namespace}/${b.metadata.name}`, b);
        return Promise.resolve(b as T);
      }
      if (method === "PATCH") {
        const cur = key ? secrets.get(key) : undefined;
        if (!cur) return notFound();
        const patch = (body as { metadata: { annotations: Record<string, string | null> } })
          .metadata.annotations;
        for (const [k, v] of Object.entries(patch))
          if (v === null) delete cur.metadata.annotations[k];
          else cur.metadata.annotations[k] = v;
        return Promise.resolve(cur as T);
      }
      return Promise.reject(new Error(`unexpected ${method} ${path}`));
    },
  };
  return { kube, secrets, calls };
}

const until = async (what: () => boolean): Promise<void> => {
  while (!what()) await new Promise(r => setImmediate(r));
};

const GWAPI = "gateway.networking.k8s.io/v1";
const world = (
  listeners: object[],
  extra: KubeObject[] = [],
  address = "127.20.0.9",
): KubeObject[] => [
  {
    apiVersion: GWAPI,
    kind: "GatewayClass",
    metadata: { name: "kengine" },
    spec: { controllerName: "kengine.io/gateway-controller" },
  } as KubeObject,
  {
    apiVersion: GWAPI,
    kind: "Gateway",
    metadata: { name: "gw", namespace: "shop" },
    spec: { gatewayClassName: "kengine", listeners },
    status: { addresses: address ? [{ value: address }] : [] },
  } as KubeObject,
  ...extra,
];
const acme = (issuer: string) => ({
  name: "https",
  protocol: "HTTPS",
  port: 443,
  hostname: "shop.example.com",
  tls: { options: { [ACME_ISSUER_OPTION]: issuer } },
});
const http80 = { name: "http", protocol: "HTTP", port: 80 };
/** The Gateway's own parameters declare issuer `le`. */
const withIssuer = (objs: KubeObject[]): KubeObject[] => {
  const gw = objs[1] as KubeObject & { spec: Record<string, unknown> };
  gw.spec["infrastructure"] = {
    parametersRef: { group: "gateway.kengine.io", kind: "KengineParameters", name: "p" },
  };
  return [
    ...objs,
    {
      apiVersion: "gateway.kengine.io/v1alpha1",
      kind: "KengineParameters",
      metadata: { name: "p", namespace: "shop" },
      spec: { acme: { issuers: [{ name: "le", server: "https://acme.example/dir" }] } },
    } as KubeObject,
  ];
};
const SECRET = `shop/${acmeSecretName("shop.example.com")}`;
const quiet = { info: () => {}, warn: () => {} };

describe("ACME manager bookkeeping", () => {
  it("writes an unusable issuer on the name's Secret once, with a back-off, and leaves it alone meanwhile", async () => {
    const f = fakeKube();
    const m = new AcmeManager({ kube: f.kube, log: quiet, namespace: "kengine" });
    const now = new Date();
    m.update(snapshotOf(world([http80, acme("nope")])), now);
    await until(() => f.secrets.has(SECRET));
    const a = f.secrets.get(SECRET)!.metadata.annotations;
    expect(a[AcmeAnnotation.state]).toBe("Failed");
    expect(a[AcmeAnnotation.message]).toMatch(
      /^issuer nope is not declared in the KengineParameters/,
    );
    expect(a[AcmeAnnotation.failures]).toBe("1");
    expect(new Date(a[AcmeAnnotation.retryAt]!).getTime()).toBeGreaterThan(now.getTime());
    expect(f.calls.some(c => c.includes("kengine-acme-account"))).toBe(false); // the CA was not asked
    const writes = f.calls.length;
    // the next build sees the Secret: no new write before the back-off has passed
    m.update(
      snapshotOf(
        world(
          [http80, acme("nope")],
          [{ apiVersion: "v1", kind: "Secret", ...f.secrets.get(SECRET)! } as KubeObject],
        ),
      ),
      now,
    );
    await new Promise(r => setImmediate(r));
    expect(f.calls.length).toBe(writes);
    m.stop();
  });

  it("says HTTP-01 needs a port-80 listener when the Gateway has none", async () => {
    const f = fakeKube();
    const objs = withIssuer(world([acme("le")]));
    const m = new AcmeManager({ kube: f.kube, log: quiet, namespace: "kengine" });
    m.update(snapshotOf(objs));
    await until(() => f.secrets.has(SECRET));
    expect(f.secrets.get(SECRET)!.metadata.annotations[AcmeAnnotation.message]).toMatch(
      /^HTTP-01 needs an HTTP listener on port 80/,
    );
    m.stop();
  });

  it("orders nothing for a Gateway without an address", async () => {
    const f = fakeKube();
    const objs = withIssuer(world([http80, acme("le")], [], ""));
    const m = new AcmeManager({ kube: f.kube, log: quiet, namespace: "kengine" });
    m.update(snapshotOf(objs));
    await new Promise(r => setImmediate(r));
    expect(f.calls).toEqual([]);
    m.stop();
  });
});
