/**
 * The manager's orchestration with an in-memory Secret store (a fake of the API server, for the
 * bookkeeping only: issuance itself is proven against Pebble in tests/integration/acme-*):
 * settings that cannot work are written on the name's Secret once, with a back-off, and not
 * again until it has passed; nothing is ordered (or written) for an issuer that is not declared
 * or not granted, nor for a Gateway without an address; the account key is random, created once
 * in the controller's namespace, and a Secret of that name the manager did not write is not used.
 */
import { createPrivateKey } from "node:crypto";
import { KubeClient } from "../kube/client";
import { KubeObject, snapshotOf } from "../snapshot";
import {
  ACME_ISSUER_OPTION,
  AcmeAnnotation,
  acmeSecretLabels,
  acmeSecretName,
} from "../validation/acme";
import { wantedNames } from "./issuers";
import { AcmeManager, accountSecretName } from "./manager";

type Stored = {
  metadata: {
    name: string;
    namespace: string;
    labels?: Record<string, string>;
    annotations: Record<string, string>;
  };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
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
        const b = structuredClone(body) as Stored;
        const at = `${b.metadata.namespace}/${b.metadata.name}`;
        if (secrets.has(at))
          return Promise.reject(Object.assign(new Error("exists"), { status: 409 }));
        // the API server stores stringData as base64 data
        if (b.stringData)
          b.data = Object.fromEntries(
            Object.entries(b.stringData).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
          );
        delete b.stringData;
        b.metadata.annotations ??= {};
        secrets.set(at, b);
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
/** Our class; its parameters (shop/p) are added by withIssuer. */
const world = (
  listeners: object[],
  extra: KubeObject[] = [],
  address = "127.20.0.9",
): KubeObject[] => [
  {
    apiVersion: GWAPI,
    kind: "GatewayClass",
    metadata: { name: "kengine" },
    spec: {
      controllerName: "kengine.io/gateway-controller",
      parametersRef: {
        group: "gateway.kengine.io",
        kind: "KengineParameters",
        name: "p",
        namespace: "shop",
      },
    },
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
/** The class's parameters (shop/p) declare issuer `le`, granted to their namespace. */
const withIssuer = (objs: KubeObject[], issuer: object = {}): KubeObject[] => [
  ...objs,
  {
    apiVersion: "gateway.kengine.io/v1alpha1",
    kind: "KengineParameters",
    metadata: { name: "p", namespace: "shop" },
    spec: {
      acme: { issuers: [{ name: "le", server: "https://acme.example/dir", ...issuer }] },
    },
  } as KubeObject,
];
const SECRET = `shop/${acmeSecretName("shop.example.com")}`;
const quiet = { info: () => {}, warn: () => {} };

describe("ACME manager bookkeeping", () => {
  it("orders and writes nothing for an issuer that is not declared or not granted (the listener says why)", async () => {
    for (const objs of [
      withIssuer(world([http80, acme("nope")])),
      withIssuer(world([http80, acme("le")]), {
        allowedNamespaces: { from: "Selector", selector: { matchLabels: { acme: "yes" } } },
      }),
    ]) {
      const f = fakeKube();
      const m = new AcmeManager({ kube: f.kube, log: quiet, namespace: "kengine" });
      m.update(snapshotOf(objs));
      await new Promise(r => setImmediate(r));
      expect(f.calls).toEqual([]);
      m.stop();
    }
  });

  it("writes a setting that cannot work on the name's Secret once, with a back-off, and leaves it alone meanwhile", async () => {
    const f = fakeKube();
    const m = new AcmeManager({ kube: f.kube, log: quiet, namespace: "kengine" });
    const now = new Date();
    const objs = withIssuer(world([acme("le")]));
    m.update(snapshotOf(objs), now);
    await until(() => f.secrets.has(SECRET));
    const stored = f.secrets.get(SECRET)!;
    expect(stored.metadata.labels).toEqual(acmeSecretLabels("certificate"));
    const a = stored.metadata.annotations;
    expect(a[AcmeAnnotation.state]).toBe("Failed");
    expect(a[AcmeAnnotation.message]).toMatch(/^HTTP-01 needs an HTTP listener on port 80/);
    expect(a[AcmeAnnotation.failures]).toBe("1");
    expect(new Date(a[AcmeAnnotation.retryAt]!).getTime()).toBeGreaterThan(now.getTime());
    expect(f.calls.some(c => c.includes("kengine-acme-account"))).toBe(false); // the CA was not asked
    const writes = f.calls.length;
    // the next build sees the Secret: no new write before the back-off has passed
    m.update(
      snapshotOf([...objs, { apiVersion: "v1", kind: "Secret", ...stored } as KubeObject]),
      now,
    );
    await new Promise(r => setImmediate(r));
    expect(f.calls.length).toBe(writes);
    m.stop();
  });

  it("creates the account key once, random, in a labelled Secret of the controller's namespace", async () => {
    const objs = withIssuer(world([http80, acme("le")]));
    const issuer = wantedNames(snapshotOf(objs))[0]!.issuer;
    const name = accountSecretName(issuer);
    const keys: string[] = [];
    for (let run = 0; run < 2; run++) {
      const f = fakeKube();
      // The CA is unreachable: the account Secret is written before the CA sees the key.
      const m = new AcmeManager({
        kube: f.kube,
        log: quiet,
        namespace: "kengine",
        selfCheckTimeoutMs: 0,
        transport: () => () => Promise.reject(new Error("offline")),
      });
      m.update(snapshotOf(objs));
      await until(
        () => f.secrets.get(SECRET)?.metadata.annotations[AcmeAnnotation.state] === "Failed",
      );
      m.stop();
      const account = f.secrets.get(`kengine/${name}`)!;
      expect(account.metadata.labels).toEqual(acmeSecretLabels("account"));
      expect(account.metadata.annotations["gateway.kengine.io/acme-account-of"]).toBe(
        "shop/p/le https://acme.example/dir  ",
      );
      const pem = Buffer.from(account.data!["account.key"]!, "base64").toString();
      expect(createPrivateKey(pem).asymmetricKeyDetails).toEqual({ namedCurve: "prime256v1" });
      keys.push(pem);
      // A second manager on the same store reuses it: no second POST.
      const again = new AcmeManager({
        kube: f.kube,
        log: quiet,
        namespace: "kengine",
        transport: () => () => Promise.reject(new Error("offline")),
      });
      const posts = f.calls.filter(c => c === "POST /api/v1/namespaces/kengine/secrets").length;
      f.secrets.delete(SECRET);
      again.update(snapshotOf(objs));
      await until(() => f.secrets.has(SECRET));
      await until(
        () => f.secrets.get(SECRET)?.metadata.annotations[AcmeAnnotation.state] === "Failed",
      );
      again.stop();
      expect(f.calls.filter(c => c === "POST /api/v1/namespaces/kengine/secrets").length).toBe(
        posts,
      );
      expect(
        Buffer.from(f.secrets.get(`kengine/${name}`)!.data!["account.key"]!, "base64").toString(),
      ).toBe(pem);
    }
    // Two stores, two keys: nothing about the key follows from the issuer's public settings.
    expect(keys[0]).not.toBe(keys[1]);
    // Another declaration of the same directory and email has its own account.
    expect(accountSecretName({ ...issuer, parameters: "team/p" })).not.toBe(name);
  });

  it("does not use an account Secret the manager did not write, and says so on the name", async () => {
    const objs = withIssuer(world([http80, acme("le")]));
    const issuer = wantedNames(snapshotOf(objs))[0]!.issuer;
    const name = accountSecretName(issuer);
    const f = fakeKube();
    f.secrets.set(`kengine/${name}`, {
      metadata: { name, namespace: "kengine", annotations: {} },
      data: { "account.key": Buffer.from("planted").toString("base64") },
    });
    let asked = 0;
    const m = new AcmeManager({
      kube: f.kube,
      log: quiet,
      namespace: "kengine",
      transport: () => () => {
        asked++;
        return Promise.reject(new Error("offline"));
      },
    });
    m.update(snapshotOf(objs));
    await until(
      () => f.secrets.get(SECRET)?.metadata.annotations[AcmeAnnotation.state] === "Failed",
    );
    m.stop();
    expect(f.secrets.get(SECRET)!.metadata.annotations[AcmeAnnotation.message]).toBe(
      `Secret kengine/${name} was not written by the controller for ACME issuer le of KengineParameters shop/p (labels gateway.kengine.io/acme: account, app.kubernetes.io/managed-by: kengine-gateway; annotation gateway.kengine.io/acme-account-of): its key is not used; delete it to let the controller create the account`,
    );
    expect(asked).toBe(0);
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
