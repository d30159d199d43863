/**
 * Automatic HTTPS for an Ingress on the real cluster (docs/ingress.md, "Automatic HTTPS"): a
 * real Pebble, a Gateway whose class declares the issuer, an IngressClass naming that Gateway
 * and the issuer. An Ingress whose `tls` entry has hosts and no Secret gets a certificate
 * ordered once, kept in the Gateway's namespace and served by the proxy (verified against
 * Pebble's root). An Ingress in a namespace the issuer does not grant gets no order, and its
 * Event says why.
 */
import type { ChildProcess } from "node:child_process";
import { AcmeSetting, GW, ISSUER, acmeSetting, httpsVerified } from "../support/acme";
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlOk } from "../support/kube";
import { startInstance, stopInstances } from "../support/instances";
import { ACME_ISSUER_OPTION, acmeSecretName } from "../../capabilities/validation/acme";

describe("automatic HTTPS for an Ingress, with Pebble", () => {
  let s: AcmeSetting;
  let tenant = "";
  const procs: ChildProcess[] = [];
  const ingressClass = `ing-acme-${Date.now().toString(36)}`;
  const host = (ns: string) => `app.${ns}.example.com`;

  beforeAll(async () => {
    tenant = createNamespace("ing-acme-tenant");
    s = await acmeSetting("ing-acme", { replicas: 1, namespaceDomain: true });
  });
  afterAll(async () => {
    await stopInstances(procs);
    kubectl(["delete", "ingressclass", ingressClass, "--ignore-not-found"]);
    if (tenant) deleteNamespace(tenant);
    await s?.close();
  });

  const ingress = (ns: string) => ({
    apiVersion: "networking.k8s.io/v1",
    kind: "Ingress",
    metadata: { name: "app", namespace: ns },
    spec: {
      ingressClassName: ingressClass,
      tls: [{ hosts: [host(ns)] }],
      rules: [
        {
          host: host(ns),
          http: {
            paths: [
              {
                path: "/",
                pathType: "Prefix",
                backend: { service: { name: "echo", port: { number: 8080 } } },
              },
            ],
          },
        },
      ],
    },
  });

  it("orders the Ingress's host once and the proxy serves it; an ungranted namespace gets nothing", async () => {
    // The Gateway admits ListenerSets (the Ingress's tls listeners) from every namespace.
    kubectlOk([
      "patch",
      "gateway",
      GW,
      "-n",
      s.ns,
      "--type",
      "merge",
      "-p",
      JSON.stringify({ spec: { allowedListeners: { namespaces: { from: "All" } } } }),
    ]);
    kubectlOk(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "networking.k8s.io/v1",
        kind: "IngressClass",
        metadata: { name: ingressClass, annotations: { [ACME_ISSUER_OPTION]: ISSUER } },
        spec: {
          controller: "kengine.io/ingress-controller",
          parameters: {
            apiGroup: "gateway.networking.k8s.io",
            kind: "Gateway",
            scope: "Namespace",
            namespace: s.ns,
            name: GW,
          },
        },
      }),
    );
    const a = startInstance(s.ns, `ing-acme-${Date.now().toString(36)}`, "ing-acme");
    procs.push(a.proc);
    const addr = await eventually("the Gateway's address", s.address, 240_000, 500);
    // the Gateway's own name first (its order is the setting's), then the Ingress's
    await eventually(
      "the Gateway's own certificate",
      () => (s.listener("Programmed").startsWith("True|") ? true : undefined),
      120_000,
      500,
    );
    const ordersBefore = s.pebble.orders();
    kubectlOk(["apply", "-f", "-"], JSON.stringify(ingress(s.ns)));
    kubectlOk(["apply", "-f", "-"], JSON.stringify(ingress(tenant)));

    const root = await s.pebble.root();
    const served = await eventually(
      "https for the Ingress's host, trusted by Pebble's root",
      async () => {
        const r = await httpsVerified(addr, host(s.ns), root);
        return r.status === 200 ? r : undefined;
      },
      120_000,
      1000,
    );
    expect(served.serial).toBeDefined();
    // the certificate lives in the Gateway's namespace, written by the controller
    const state = kubectl([
      "get",
      "secret",
      acmeSecretName(host(s.ns)),
      "-n",
      s.ns,
      "-o",
      "jsonpath={.metadata.annotations.gateway\\.kengine\\.io/acme-state}",
    ]).stdout;
    expect(state).toBe("Valid");
    // the tenant's namespace is not granted (the issuer's default: the parameters' namespace)
    const said = await eventually(
      "the tenant Ingress's Event",
      () => {
        const notes = kubectl([
          "get",
          "events",
          "-n",
          tenant,
          "--field-selector",
          "reason=IngressNotServed",
          "-o",
          "jsonpath={.items[*].note}{.items[*].message}",
        ]).stdout;
        return /not granted|allowedNamespaces/i.test(notes) ? notes : undefined;
      },
      60_000,
      1000,
    );
    expect(said).toContain(ISSUER);
    expect(kubectl(["get", "secret", acmeSecretName(host(tenant)), "-n", s.ns]).code).not.toBe(0);
    expect(kubectl(["get", "secret", acmeSecretName(host(tenant)), "-n", tenant]).code).not.toBe(0);
    // one order: the Ingress's host; none for the tenant's
    expect(s.pebble.orders() - ordersBefore).toBe(1);
  }, 600_000);
});
