/**
 * Automatic HTTPS end to end on the real cluster: a real Pebble (Let's Encrypt's test CA) and a
 * Gateway of 3 real proxy pods whose HTTPS listener has no certificate, only an issuer. The
 * controller orders the name once for the whole fleet, the proxies answer Pebble's HTTP-01
 * request on port 80, the certificate lands in a Secret and every proxy serves it (checked
 * against Pebble's root, pod by pod); a restarted proxy pod serves it at once; a restarted
 * controller does not order again. Then the tenant boundary: a tenant's ListenerSet
 * listener for the platform's name plus a tenant Secret carrying a challenge answer puts no
 * answer on the proxies; a Gateway whose own parameters declare an issuer is not accepted and
 * its issuer URL is never fetched; a Gateway in a namespace the issuer is not granted to gets
 * no certificate and says why.
 */
import type { ChildProcess } from "node:child_process";
import { request } from "node:http";
import { createServer } from "node:net";
import { AcmeSetting, GW, ISSUER, acmeSetting, httpsVerified } from "../support/acme";
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlOk } from "../support/kube";
import { startInstance, stopInstance, stopInstances } from "../support/instances";
import { proxyPods } from "../support/proxy-pods";
import {
  ACME_ISSUER_OPTION,
  AcmeAnnotation,
  acmeSecretLabels,
  acmeSecretName,
} from "../../capabilities/validation/acme";

/** GET http://address:80/path with Host `host`: status and body (≤ 4 KiB); 0 on failure. */
function httpGet(
  address: string,
  host: string,
  path: string,
): Promise<{ status: number; body: string }> {
  return new Promise(resolve => {
    const req = request(
      { host: address, port: 80, path, headers: { Host: host }, timeout: 5000 },
      res => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          if (body.length < 4096) body += c;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        res.on("error", () => resolve({ status: 0, body: "" }));
      },
    );
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve({ status: 0, body: "" }));
    req.end();
  });
}

const json = (o: object): string => JSON.stringify(o);
const condition = (kind: string, ns: string, name: string, path: string): string =>
  kubectl([
    "get",
    kind,
    name,
    "-n",
    ns,
    "-o",
    `jsonpath={${path}.status}|{${path}.reason}|{${path}.message}`,
  ]).stdout.trim();

describe("automatic HTTPS: issuance with Pebble, one order for the fleet", () => {
  let s: AcmeSetting;
  const procs: ChildProcess[] = [];

  beforeAll(async () => {
    s = await acmeSetting("acme-issue", { replicas: 3 });
  });

  const tenants: string[] = [];
  afterAll(async () => {
    await stopInstances(procs);
    for (const t of tenants) deleteNamespace(t);
    await s?.close();
  });

  it("orders the name once, stores it in a Secret, and every proxy serves it", async () => {
    const a = startInstance(s.ns, `acme-a-${Date.now().toString(36)}`, "acme-issue");
    procs.push(a.proc);
    const addr = await eventually("the Gateway's address", s.address, 240_000, 500);

    const issued = await eventually(
      "the listener to be programmed with the issued certificate",
      () => {
        const p = s.listener("Programmed");
        return p.startsWith("True|") ? s.listener("ResolvedRefs") : undefined;
      },
      120_000,
      500,
    );
    expect(issued).toMatch(
      new RegExp(
        `^True\\|ResolvedRefs\\|certificate for ${s.name.replace(/\./g, "\\.")} issued by ACME issuer pebble .*renews at `,
      ),
    );

    // Through the Gateway's address, verified against Pebble's root.
    const root = await s.pebble.root();
    const served = await eventually(
      "https through the Gateway, trusted by Pebble's root",
      async () => {
        const r = await httpsVerified(addr, s.name, root);
        return r.status === 200 ? r : undefined;
      },
      60_000,
      500,
    );

    // The Secret others can read and back up.
    const secret = JSON.parse(
      kubectlOk(["get", "secret", acmeSecretName(s.name), "-n", s.ns, "-o", "json"]),
    ) as {
      type: string;
      metadata: { annotations: Record<string, string> };
      data: Record<string, string>;
    };
    expect(secret.type).toBe("kubernetes.io/tls");
    expect(secret.metadata.annotations["gateway.kengine.io/acme-state"]).toBe("Valid");
    expect(secret.metadata.annotations["gateway.kengine.io/acme-challenges"]).toBeUndefined();
    expect(Buffer.from(secret.data["tls.crt"]!, "base64").toString()).toContain(
      "BEGIN CERTIFICATE",
    );

    // Every proxy pod presents the same certificate (3 pods, one order at Pebble).
    const pods = await eventually(
      "3 ready proxy pods",
      () => {
        const p = proxyPods(s.ns, GW).filter(x => x.ready && !x.deleting);
        return p.length === 3 ? p : undefined;
      },
      120_000,
      500,
    );
    for (const pod of pods) {
      const ip = kubectlOk([
        "get",
        "pod",
        pod.name,
        "-n",
        s.ns,
        "-o",
        "jsonpath={.status.podIP}",
      ]).trim();
      const r = await eventually(
        `proxy ${pod.name} to serve the certificate`,
        async () => {
          const x = await httpsVerified(ip, s.name, root);
          return x.status === 200 ? x : undefined;
        },
        60_000,
        500,
      );
      expect(r.serial).toBe(served.serial);
    }
    expect(s.pebble.orders()).toBe(1);
    expect(a.acme.filter(m => m["acme"] === "acme order")).toHaveLength(1);

    // A new proxy pod serves the certificate as soon as it is ready (last-known-good config).
    kubectlOk(["delete", "pod", pods[0]!.name, "-n", s.ns, "--wait=true"]);
    const fresh = await eventually(
      "a replacement proxy pod, ready",
      () =>
        proxyPods(s.ns, GW).find(x => x.ready && !x.deleting && !pods.some(p => p.name === x.name)),
      120_000,
      250,
    );
    const freshIp = kubectlOk([
      "get",
      "pod",
      fresh.name,
      "-n",
      s.ns,
      "-o",
      "jsonpath={.status.podIP}",
    ]).trim();
    const first = await httpsVerified(freshIp, s.name, root);
    expect(first).toMatchObject({ status: 200, serial: served.serial });

    // A restarted controller reads the Secret and orders nothing.
    await stopInstance(a.proc);
    const b = startInstance(s.ns, `acme-b-${Date.now().toString(36)}`, "acme-issue");
    procs.push(b.proc);
    await eventually(
      "the new controller to lead",
      () => (b.leader ? true : undefined),
      60_000,
      250,
    );
    await eventually(
      "the new controller to program the proxies",
      () => (b.fleet.some(e => e === "pushed" || e === "adopted") ? true : undefined),
      60_000,
      250,
    );
    expect(s.pebble.orders()).toBe(1);
    expect(b.acme.filter(m => m["acme"] === "acme order")).toHaveLength(0);
    expect((await httpsVerified(addr, s.name, root)).status).toBe(200);
  });

  it("serves no tenant's HTTP-01 answer for the platform's name: a ListenerSet listener and a tenant Secret", async () => {
    const addr = s.address()!;
    const tenant = createNamespace("acme-tenant");
    tenants.push(tenant);
    const ordersBefore = s.pebble.orders();
    // The platform opens its Gateway to ListenerSets from every namespace (docs/operations.md §11).
    kubectlOk([
      "patch",
      "gateway",
      GW,
      "-n",
      s.ns,
      "--type",
      "merge",
      "-p",
      json({ spec: { allowedListeners: { namespaces: { from: "All" } } } }),
    ]);
    const token = "tenant-token_1";
    const answer = `${token}.tenant-account-thumbprint`;
    kubectlOk(
      ["apply", "-f", "-"],
      json({
        apiVersion: "v1",
        kind: "List",
        items: [
          {
            apiVersion: "gateway.networking.k8s.io/v1",
            kind: "ListenerSet",
            metadata: { name: "take", namespace: tenant },
            spec: {
              parentRef: { name: GW, namespace: s.ns },
              listeners: [
                {
                  name: "anything",
                  protocol: "HTTPS",
                  port: 8443,
                  hostname: s.name,
                  tls: { mode: "Terminate", options: { [ACME_ISSUER_OPTION]: "anything" } },
                },
                {
                  name: "platform-issuer",
                  protocol: "HTTPS",
                  port: 8444,
                  hostname: s.name,
                  tls: { mode: "Terminate", options: { [ACME_ISSUER_OPTION]: ISSUER } },
                },
                { name: "plain", protocol: "HTTP", port: 80, hostname: s.name },
              ],
            },
          },
          {
            // the Secret the old code read, with the manager's own labels copied
            apiVersion: "v1",
            kind: "Secret",
            metadata: {
              name: acmeSecretName(s.name),
              namespace: tenant,
              labels: acmeSecretLabels("certificate"),
              annotations: {
                [AcmeAnnotation.name]: s.name,
                [AcmeAnnotation.state]: "Pending",
                [AcmeAnnotation.challenges]: JSON.stringify({ [token]: answer }),
              },
            },
            type: "kubernetes.io/tls",
            data: { "tls.crt": "", "tls.key": "" },
          },
        ],
      }),
    );
    // The controller has translated the ListenerSet: its ACME listeners say why they get nothing,
    // and its plain listener (which takes the platform's plain traffic, as the spec allows) is served.
    const refused = await eventually(
      "the ListenerSet's ACME listener to be refused",
      () => {
        const c = condition(
          "listenerset",
          tenant,
          "take",
          ".status.listeners[?(@.name=='platform-issuer')].conditions[?(@.type=='ResolvedRefs')]",
        );
        return c.startsWith("False|") ? c : undefined;
      },
      60_000,
      250,
    );
    expect(refused).toMatch(
      /^False\|InvalidCertificateRef\|automatic certificates are ordered \(and HTTP-01 answered\) only for a Gateway's own listeners/,
    );
    await eventually(
      "the ListenerSet's plain listener to be programmed",
      () =>
        condition(
          "listenerset",
          tenant,
          "take",
          ".status.listeners[?(@.name=='plain')].conditions[?(@.type=='Programmed')]",
        ).startsWith("True|")
          ? true
          : undefined,
      60_000,
      250,
    );
    // Every proxy, through the Gateway's address: the challenge path is never the tenant's answer.
    for (let i = 0; i < 20; i++) {
      const r = await httpGet(addr, s.name, `/.well-known/acme-challenge/${token}`);
      expect(r.body).not.toContain(answer);
    }
    expect(s.pebble.orders()).toBe(ordersBefore);
    // The platform's name still serves its own certificate.
    expect((await httpsVerified(addr, s.name, await s.pebble.root())).status).toBe(200);
  });

  it("does not accept a Gateway whose own parameters declare an issuer, and never fetches its URL", async () => {
    const tenant = createNamespace("acme-own-issuer");
    tenants.push(tenant);
    // Something listening where the tenant's issuer points: it must see no connection.
    let connections = 0;
    const lure = createServer(c => {
      connections++;
      c.destroy();
    });
    await new Promise<void>(r => lure.listen(0, "127.0.0.1", r));
    const port = (lure.address() as { port: number }).port;
    try {
      kubectlOk(
        ["apply", "-f", "-"],
        json({
          apiVersion: "v1",
          kind: "List",
          items: [
            {
              apiVersion: "gateway.kengine.io/v1alpha1",
              kind: "KengineParameters",
              metadata: { name: "mine", namespace: tenant },
              spec: {
                proxy: { replicas: 0 },
                acme: { issuers: [{ name: "mine", server: `https://127.0.0.1:${port}/dir` }] },
              },
            },
            {
              apiVersion: "gateway.networking.k8s.io/v1",
              kind: "Gateway",
              metadata: { name: "own", namespace: tenant },
              spec: {
                gatewayClassName: s.cls,
                infrastructure: {
                  parametersRef: {
                    group: "gateway.kengine.io",
                    kind: "KengineParameters",
                    name: "mine",
                  },
                },
                listeners: [
                  { name: "http", protocol: "HTTP", port: 80 },
                  {
                    name: "https",
                    protocol: "HTTPS",
                    port: 443,
                    hostname: `own.${tenant}.example.com`,
                    tls: { mode: "Terminate", options: { [ACME_ISSUER_OPTION]: "mine" } },
                  },
                ],
              },
            },
          ],
        }),
      );
      const accepted = await eventually(
        "the Gateway to be refused",
        () => {
          const c = condition(
            "gateway",
            tenant,
            "own",
            ".status.conditions[?(@.type=='Accepted')]",
          );
          return c.startsWith("False|") ? c : undefined;
        },
        60_000,
        250,
      );
      expect(accepted).toMatch(
        /^False\|InvalidParameters\|.*sets what only the GatewayClass's parameters may: spec\.acme: is platform-owned/,
      );
      expect(connections).toBe(0);
      expect(
        kubectl(["get", "secret", acmeSecretName(`own.${tenant}.example.com`), "-n", tenant]).code,
      ).not.toBe(0);
    } finally {
      lure.close();
    }
  });

  it("gives a Gateway in a namespace the issuer is not granted to no certificate, and says so", async () => {
    const tenant = createNamespace("acme-ungranted");
    tenants.push(tenant);
    const ordersBefore = s.pebble.orders();
    const host = `ungranted.${tenant}.example.com`;
    kubectlOk(
      ["apply", "-f", "-"],
      json({
        apiVersion: "v1",
        kind: "List",
        items: [
          {
            apiVersion: "gateway.kengine.io/v1alpha1",
            kind: "KengineParameters",
            metadata: { name: "small", namespace: tenant },
            spec: { proxy: { replicas: 0 } },
          },
          {
            apiVersion: "gateway.networking.k8s.io/v1",
            kind: "Gateway",
            metadata: { name: "team", namespace: tenant },
            spec: {
              gatewayClassName: s.cls,
              infrastructure: {
                parametersRef: {
                  group: "gateway.kengine.io",
                  kind: "KengineParameters",
                  name: "small",
                },
              },
              listeners: [
                { name: "http", protocol: "HTTP", port: 80 },
                {
                  name: "https",
                  protocol: "HTTPS",
                  port: 443,
                  hostname: host,
                  tls: { mode: "Terminate", options: { [ACME_ISSUER_OPTION]: ISSUER } },
                },
              ],
            },
          },
        ],
      }),
    );
    const said = await eventually(
      "the listener to say the issuer is not granted",
      () => {
        const c = condition(
          "gateway",
          tenant,
          "team",
          ".status.listeners[?(@.name=='https')].conditions[?(@.type=='ResolvedRefs')]",
        );
        return c.startsWith("False|") ? c : undefined;
      },
      60_000,
      250,
    );
    expect(said).toBe(
      `False|RefNotPermitted|ACME issuer ${ISSUER} of KengineParameters ${s.ns}/fleet is not granted to namespace ${tenant} (allowedNamespaces from: Same, namespace ${s.ns} only): reference a certificate, or ask the platform team to grant the issuer`,
    );
    expect(kubectl(["get", "secret", acmeSecretName(host), "-n", tenant]).code).not.toBe(0);
    expect(s.pebble.orders()).toBe(ordersBefore);
  });
});
