/**
 * Admission through kubectl, with the module running under `pepr dev`: for each bound kind
 * with a rule an object of our class the proxy cannot run can break, such an object is denied
 * with the field path in the message (GatewayClass and ReferenceGrant: nothing the API server
 * stores is refused, so they are shown admitted);
 * valid objects are stored; objects the spec wants reported through status (missing backend,
 * cross-namespace backend without a ReferenceGrant, hostname mismatch, unknown section) are
 * admitted; and the same objects attached to another controller are left alone.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createNamespace, deleteNamespace, kubectl, kubectlOk } from "../support/kube";
import { kubeconfigPath, kubectlBin, repoRoot } from "../support/paths";
import { PeprDev, startModule } from "../support/module";
import { webhookName } from "../../hack/pepr-dev";
import pkg from "../../package.json";

const suffix = Date.now().toString(36);
const ours = `kengine-adm-${suffix}`;
const theirs = `other-adm-${suffix}`;

const yaml = (o: object): string => JSON.stringify(o);
const gatewayClass = (name: string, controllerName: string) =>
  yaml({
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "GatewayClass",
    metadata: { name },
    spec: { controllerName },
  });
const gateway = (
  ns: string,
  name: string,
  cls: string,
  listeners: object[] = [{ name: "http", port: 80, protocol: "HTTP", hostname: "app.example.com" }],
) =>
  yaml({
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "Gateway",
    metadata: { name, namespace: ns },
    spec: { gatewayClassName: cls, listeners },
  });
const httpRoute = (ns: string, name: string, spec: object) =>
  yaml({
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "HTTPRoute",
    metadata: { name, namespace: ns },
    spec,
  });
const grpcRoute = (ns: string, name: string, spec: object) =>
  yaml({
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "GRPCRoute",
    metadata: { name, namespace: ns },
    spec,
  });

describe("admission through kubectl", () => {
  let dev: PeprDev;
  let ns: string;
  let other: string;

  beforeAll(async () => {
    ns = createNamespace("adm");
    other = createNamespace("adm-other");
    kubectlOk(["apply", "-f", "-"], gatewayClass(ours, "kengine.io/gateway-controller"));
    kubectlOk(["apply", "-f", "-"], gatewayClass(theirs, "example.com/other"));
    dev = await startModule();
    kubectlOk(["apply", "-f", "-"], gateway(ns, "gw", ours));
    kubectlOk(["apply", "-f", "-"], gateway(ns, "foreign", theirs));
  });

  afterAll(async () => {
    await dev?.stop();
    kubectl(["delete", "gatewayclass", ours, theirs, "--ignore-not-found"]);
    if (ns) deleteNamespace(ns);
    if (other) deleteNamespace(other);
  });

  const denied = (manifest: string, ...fragments: string[]) => {
    const r = kubectl(["apply", "-f", "-"], manifest);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("cannot be run by the Kengine proxy");
    for (const f of fragments) expect(r.stderr).toContain(f);
  };

  it("registers one webhook: failurePolicy Fail (onError reject), no side effects, our kinds on create and update", () => {
    const cfg = JSON.parse(
      kubectlOk(["get", "validatingwebhookconfiguration", webhookName, "-o", "json"]),
    ) as {
      webhooks: {
        failurePolicy: string;
        timeoutSeconds: number;
        sideEffects: string;
        rules: { resources: string[]; operations: string[] }[];
      }[];
    };
    expect(cfg.webhooks).toHaveLength(1);
    const [hook] = cfg.webhooks;
    // `pepr dev` always registers 30 s; a deployed module (pepr build) uses pepr.webhookTimeout.
    expect({
      failurePolicy: hook.failurePolicy,
      timeoutSeconds: hook.timeoutSeconds,
      sideEffects: hook.sideEffects,
      webhookTimeout: pkg.pepr.webhookTimeout,
    }).toEqual({
      failurePolicy: "Fail",
      timeoutSeconds: 30,
      sideEffects: "None",
      webhookTimeout: 5,
    });
    const resources = hook.rules.flatMap(r => r.resources).sort();
    expect(resources).toEqual(
      [
        "backendtlspolicies",
        "gatewayclasses",
        "gateways",
        "grpcroutes",
        "httproutes",
        // an Ingress proves it is ours only through its class: a deployed module validates it in
        // the second webhook, failurePolicy Ignore (hack/webhook.ts); pepr dev registers one
        "ingresses",
        "kengineparameters",
        "listenersets",
        "referencegrants",
        "tcproutes",
        "tlsroutes",
        "udproutes",
        "xbackends",
        "xtelemetrypolicies",
      ].sort(),
    );
    for (const r of hook.rules) expect(r.operations.sort()).toEqual(["CREATE", "UPDATE"]);
  });

  it("prints the README's example denial, word for word", () => {
    const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
    const section = readme.slice(readme.indexOf("## Admission"));
    const manifest = /```yaml\n([\s\S]*?)```/.exec(section)![1];
    const shown = /```text\n\$ kubectl apply -f bad-route.yaml\n([\s\S]*?)\n```/.exec(section)![1];
    kubectlOk(["apply", "-f", "-"], gateway(ns, "demo", ours));
    const dir = mkdtempSync(join(tmpdir(), "kg-readme-"));
    writeFileSync(join(dir, "bad-route.yaml"), manifest.replaceAll("kengine-demo", ns));
    const r = spawnSync(
      kubectlBin,
      ["--kubeconfig", kubeconfigPath, "apply", "-f", "bad-route.yaml"],
      { cwd: dir, encoding: "utf8", timeout: 60_000 },
    );
    expect(r.status).not.toBe(0);
    expect(r.stderr.trim().replaceAll(ns, "kengine-demo")).toBe(shown.replace(/\n/g, " "));
  });

  it("denies a Gateway listener on a reserved port, naming the field", () => {
    denied(
      gateway(ns, "reserved", ours, [{ name: "admin", port: 2019, protocol: "HTTP" }]),
      `Gateway ${ns}/reserved`,
      "spec.listeners[0].port: is reserved by the Kengine proxy pod",
    );
    expect(kubectl(["get", "gateway", "reserved", "-n", ns]).code).not.toBe(0);
  });

  it("denies a ListenerSet of our Gateway with a reserved port", () => {
    const ls = yaml({
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "ListenerSet",
      metadata: { name: "ls", namespace: ns },
      spec: {
        parentRef: { name: "gw" },
        listeners: [{ name: "mgmt", port: 19443, protocol: "HTTP" }],
      },
    });
    const r = kubectl(["apply", "-f", "-"], ls);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      `ListenerSet ${ns}/ls cannot be run by the Kengine proxy: spec.listeners[0].port`,
    );
  });

  // (Header values with control characters are refused by the experimental channel's CRD
  // pattern before admission; validation refuses them for the standard channel.)
  it("denies an HTTPRoute collecting every problem: header match name, remove wildcard, unsupported filter, session persistence", () => {
    denied(
      httpRoute(ns, "bad", {
        parentRefs: [{ name: "gw" }],
        rules: [
          {
            matches: [{ headers: [{ name: "x_tenant", value: "a" }] }],
            filters: [
              { type: "RequestHeaderModifier", requestHeaderModifier: { remove: ["X-*"] } },
              {
                type: "ExtensionRef",
                extensionRef: { group: "example.com", kind: "Plugin", name: "p" },
              },
            ],
            backendRefs: [{ name: "svc", port: 80 }],
          },
          {
            // v1.7 CRD shape; the proxy drops request headers named with "_" or ".".
            sessionPersistence: { type: "Header", header: { name: "x_session" } },
            backendRefs: [{ name: "svc", port: 80 }],
          },
        ],
      }),
      `HTTPRoute ${ns}/bad`,
      'spec.rules[0].matches[0].headers[0].name: contains "_" or "."',
      'spec.rules[0].filters[0].requestHeaderModifier.remove[0]: contains "*"',
      "spec.rules[0].filters[1].extensionRef: the proxy implements no ExtensionRef filters",
      'spec.rules[1].sessionPersistence.header.name: contains "_" or "."',
    );
  });

  it("denies a GRPCRoute with a non-RE2 service expression", () => {
    denied(
      grpcRoute(ns, "bad-grpc", {
        parentRefs: [{ name: "gw" }],
        rules: [{ matches: [{ method: { type: "RegularExpression", service: "foo(?=bar)" } }] }],
      }),
      `GRPCRoute ${ns}/bad-grpc`,
      "spec.rules[0].matches[0].method.service",
    );
  });

  it("denies a TCPRoute of our Gateway whose weights the layer-4 balancer cannot honour", () => {
    const tcp = (name: string, weights: number[]) =>
      yaml({
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "TCPRoute",
        metadata: { name, namespace: ns },
        spec: {
          parentRefs: [{ name: "gw" }],
          rules: [{ backendRefs: weights.map(weight => ({ name: "svc", port: 80, weight })) }],
        },
      });
    denied(
      tcp("tcp-bad", [1, 1000]),
      `TCPRoute ${ns}/tcp-bad`,
      "spec.rules[0].backendRefs[1].weight: the proxy's layer-4 balancing runs weights up to 100",
    );
    kubectlOk(["apply", "-f", "-"], tcp("tcp-good", [1, 100]));
    expect(kubectl(["get", "tcproute", "tcp-good", "-n", ns]).code).toBe(0);
  });

  it("denies KengineParameters no proxy fleet can be built from, naming every field", () => {
    const params = (name: string, spec: object) =>
      yaml({
        apiVersion: "gateway.kengine.io/v1alpha1",
        kind: "KengineParameters",
        metadata: { name, namespace: ns },
        spec,
      });
    denied(
      params("bad-params", {
        proxy: {
          image: "Kengine Latest",
          resources: { requests: { memory: "2Gi" }, limits: { memory: "1Gi" } },
          tolerations: [{ operator: "Exists", value: "x" }],
        },
      }),
      `KengineParameters ${ns}/bad-params`,
      "spec.proxy.image: is not a container image reference",
      'spec.proxy.resources.requests["memory"]: must not exceed its limit (1Gi)',
      "spec.proxy.tolerations[0].value: must be empty when operator is Exists",
    );
    kubectlOk(
      ["apply", "-f", "-"],
      params("good-params", {
        proxy: { replicas: 3, resources: { requests: { cpu: "100m", memory: "64Mi" } } },
      }),
    );
    expect(kubectl(["get", "kengineparameters", "good-params", "-n", ns]).code).toBe(0);
  });

  it("denies a Gateway whose own parameters choose the proxy image or placement, naming each field", () => {
    kubectlOk(
      ["apply", "-f", "-"],
      yaml({
        apiVersion: "gateway.kengine.io/v1alpha1",
        kind: "KengineParameters",
        metadata: { name: "tenant-image", namespace: ns },
        spec: {
          proxy: { replicas: 1, image: "example.com/tenant/kengine:1", nodeSelector: { a: "b" } },
        },
      }),
    );
    const withParameters = (name: string, cls: string) =>
      yaml({
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "Gateway",
        metadata: { name, namespace: ns },
        spec: {
          gatewayClassName: cls,
          infrastructure: {
            parametersRef: {
              group: "gateway.kengine.io",
              kind: "KengineParameters",
              name: "tenant-image",
            },
          },
          listeners: [{ name: "http", port: 80, protocol: "HTTP" }],
        },
      });
    denied(
      withParameters("tenant-gw", ours),
      `Gateway ${ns}/tenant-gw`,
      `spec.infrastructure.parametersRef (KengineParameters ${ns}/tenant-image spec.proxy.image): is platform-owned`,
      "spec.proxy.nodeSelector): is platform-owned",
    );
    // another controller's Gateway with the same reference is left alone
    kubectlOk(["apply", "-f", "-"], withParameters("tenant-foreign", theirs));
  });

  it("denies a Gateway whose own parameters declare ACME issuers; stores an ACME ListenerSet listener with a warning", () => {
    kubectlOk(
      ["apply", "-f", "-"],
      yaml({
        apiVersion: "gateway.kengine.io/v1alpha1",
        kind: "KengineParameters",
        metadata: { name: "tenant-acme", namespace: ns },
        spec: { acme: { issuers: [{ name: "mine", server: "https://127.0.0.1:9/dir" }] } },
      }),
    );
    denied(
      yaml({
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "Gateway",
        metadata: { name: "tenant-acme", namespace: ns },
        spec: {
          gatewayClassName: ours,
          infrastructure: {
            parametersRef: {
              group: "gateway.kengine.io",
              kind: "KengineParameters",
              name: "tenant-acme",
            },
          },
          listeners: [{ name: "http", port: 80, protocol: "HTTP" }],
        },
      }),
      `spec.infrastructure.parametersRef (KengineParameters ${ns}/tenant-acme spec.acme): is platform-owned: ACME issuers come only from the GatewayClass's parameters`,
    );
    const stored = kubectl(
      ["apply", "-f", "-"],
      yaml({
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "ListenerSet",
        metadata: { name: "acme-ls", namespace: ns },
        spec: {
          parentRef: { name: "gw" },
          listeners: [
            {
              name: "take",
              port: 8443,
              protocol: "HTTPS",
              hostname: "app.example.com",
              tls: { mode: "Terminate", options: { "kengine.io/acme-issuer": "anything" } },
            },
          ],
        },
      }),
    );
    expect(stored.code).toBe(0);
    expect(stored.stderr).toContain(
      `Warning: ListenerSet ${ns}/acme-ls: spec.listeners[0].tls.options["kengine.io/acme-issuer"]: automatic certificates are ordered (and HTTP-01 answered) only for a Gateway's own listeners, not a ListenerSet's`,
    );
  });

  const backendTLSPolicy = (name: string, service: string, validation: object) =>
    yaml({
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "BackendTLSPolicy",
      metadata: { name, namespace: ns },
      spec: { targetRefs: [{ group: "", kind: "Service", name: service }], validation },
    });

  it("denies a BackendTLSPolicy for a backend of our route that the proxy cannot verify; admits status-only problems and other controllers' backends", () => {
    kubectlOk(
      ["apply", "-f", "-"],
      httpRoute(ns, "tls-user", {
        parentRefs: [{ name: "gw" }],
        rules: [{ backendRefs: [{ name: "tls-svc", port: 443 }] }],
      }),
    );
    kubectlOk(
      ["apply", "-f", "-"],
      httpRoute(ns, "tls-foreign-user", {
        parentRefs: [{ name: "foreign" }],
        rules: [{ backendRefs: [{ name: "tls-foreign", port: 443 }] }],
      }),
    );
    const ipHost = { wellKnownCACertificates: "System", hostname: "10.0.0.7" };
    denied(
      backendTLSPolicy("ip", "tls-svc", ipHost),
      `BackendTLSPolicy ${ns}/ip cannot be run by the Kengine proxy: spec.validation.hostname: is an IP address`,
    );
    expect(kubectl(["get", "backendtlspolicy", "ip", "-n", ns]).code).not.toBe(0);
    // The same policy for a Service only another controller's route uses: not ours.
    kubectlOk(["apply", "-f", "-"], backendTLSPolicy("san-foreign", "tls-foreign", ipHost));
    // subjectAltNames (our kengine_http transport verifies them; a flavour without it reports
    // them in status): stored.
    kubectlOk(
      ["apply", "-f", "-"],
      backendTLSPolicy("san", "tls-svc", {
        wellKnownCACertificates: "System",
        hostname: "shop.internal",
        subjectAltNames: [{ type: "URI", uri: "spiffe://cluster.local/ns/shop/sa/shop" }],
      }),
    );
    // What the spec puts in the policy's status, and a SAN equal to the hostname: stored.
    const corp = kubectl(
      ["apply", "-f", "-"],
      backendTLSPolicy("corp-cas", "tls-svc", {
        wellKnownCACertificates: "example.com/corp-cas",
        hostname: "shop.internal",
      }),
    );
    expect(corp.code).toBe(0);
    // Stored, with a warning saying what its status will say.
    expect(corp.stderr).toContain(
      `Warning: BackendTLSPolicy ${ns}/corp-cas: spec.validation.wellKnownCACertificates: "example.com/corp-cas" is not supported; use System (got "example.com/corp-cas"); stored, its status will say Accepted=False/Invalid`,
    );
    kubectlOk(
      ["apply", "-f", "-"],
      backendTLSPolicy("san-hostname", "tls-svc", {
        caCertificateRefs: [{ group: "", kind: "ConfigMap", name: "missing-ca" }],
        hostname: "shop.internal",
        subjectAltNames: [{ type: "Hostname", hostname: "shop.internal" }],
      }),
    );
    for (const name of ["san-foreign", "san", "corp-cas", "san-hostname"])
      expect(kubectl(["get", "backendtlspolicy", name, "-n", ns]).code).toBe(0);
  });

  it("admits GatewayClasses of ours whatever their parametersRef, and ReferenceGrants (the spec answers in status)", () => {
    const cls = `${ours}-params`;
    const stored = kubectl(
      ["apply", "-f", "-"],
      yaml({
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "GatewayClass",
        metadata: { name: cls },
        spec: {
          controllerName: "kengine.io/gateway-controller",
          parametersRef: { group: "invalid.io", kind: "InvalidParameters", name: "invalid" },
        },
      }),
    );
    kubectl(["delete", "gatewayclass", cls, "--ignore-not-found", "--wait=false"]);
    expect(stored.code).toBe(0);
    expect(stored.stderr).toContain(
      `Warning: GatewayClass ${cls}: spec.parametersRef: invalid.io/InvalidParameters is not supported (use gateway.kengine.io/KengineParameters); stored, its status will say Accepted=False/InvalidParameters`,
    );
    kubectlOk(
      ["apply", "-f", "-"],
      yaml({
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "ReferenceGrant",
        metadata: { name: "grant", namespace: other },
        spec: {
          from: [{ group: "gateway.networking.k8s.io", kind: "HTTPRoute", namespace: ns }],
          to: [{ group: "", kind: "Service" }],
        },
      }),
    );
    expect(kubectl(["get", "referencegrant", "grant", "-n", other]).code).toBe(0);
  });

  it("stores a Gateway whose spec.tls names unsupported kinds or the insecure fallback, warning what its status will say", () => {
    const stored = kubectl(
      ["apply", "-f", "-"],
      yaml({
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "Gateway",
        metadata: { name: "client-certs", namespace: ns },
        spec: {
          gatewayClassName: ours,
          listeners: [{ name: "http", port: 80, protocol: "HTTP" }],
          tls: {
            backend: { clientCertificateRef: { group: "", kind: "WrongKind", name: "c" } },
            frontend: {
              default: {
                validation: {
                  mode: "AllowInsecureFallback",
                  caCertificateRefs: [{ group: "", kind: "Service", name: "s" }],
                },
              },
            },
          },
        },
      }),
    );
    expect(stored.code).toBe(0);
    expect(stored.stderr).toContain(
      `Warning: Gateway ${ns}/client-certs: spec.tls.backend.clientCertificateRef: WrongKind.core is not a supported client certificate kind (only core Secrets with tls.crt and tls.key); its status will say ResolvedRefs=False/InvalidClientCertificateRef`,
    );
    expect(stored.stderr).toContain(
      `Warning: Gateway ${ns}/client-certs: spec.tls.frontend.default.validation.caCertificateRefs[0]: Service.core is not a supported CA certificate kind`,
    );
    expect(stored.stderr).toContain("InsecureFrontendValidationMode=True");
  });

  it("stores valid objects of our class, braces in header values included", () => {
    kubectlOk(
      ["apply", "-f", "-"],
      httpRoute(ns, "good", {
        parentRefs: [{ name: "gw" }],
        hostnames: ["app.example.com"],
        rules: [
          {
            matches: [
              {
                path: { type: "RegularExpression", value: "/api/v[0-9]+" },
                headers: [{ name: "X-Env", value: "{prod}" }],
              },
            ],
            filters: [
              {
                type: "ResponseHeaderModifier",
                responseHeaderModifier: {
                  set: [{ name: "X-Served", value: "{http.request.host}" }],
                },
              },
            ],
            backendRefs: [{ name: "svc", port: 80 }],
          },
        ],
      }),
    );
    kubectlOk(
      ["apply", "-f", "-"],
      grpcRoute(ns, "good-grpc", {
        parentRefs: [{ name: "gw" }],
        rules: [{ matches: [{ method: { service: "a.B" } }] }],
      }),
    );
    expect(
      kubectlOk(["get", "httproute", "good", "-n", ns, "-o", "jsonpath={.metadata.name}"]),
    ).toBe("good");
    expect(
      kubectlOk(["get", "grpcroute", "good-grpc", "-n", ns, "-o", "jsonpath={.metadata.name}"]),
    ).toBe("good-grpc");
  });

  it("admits what the spec wants reported in status", () => {
    const cases: [string, object][] = [
      [
        "missing-backend",
        {
          parentRefs: [{ name: "gw" }],
          rules: [{ backendRefs: [{ name: "does-not-exist", port: 80 }] }],
        },
      ],
      [
        "cross-ns-no-grant",
        {
          parentRefs: [{ name: "gw" }],
          rules: [{ backendRefs: [{ name: "svc", namespace: other, port: 80 }] }],
        },
      ],
      [
        "hostname-mismatch",
        { parentRefs: [{ name: "gw" }], hostnames: ["other.example.org"], rules: [{}] },
      ],
      ["unknown-section", { parentRefs: [{ name: "gw", sectionName: "nope" }], rules: [{}] }],
    ];
    for (const [name, spec] of cases) {
      kubectlOk(["apply", "-f", "-"], httpRoute(ns, name, spec));
      expect(kubectl(["get", "httproute", name, "-n", ns]).code).toBe(0);
    }
  });

  it("leaves other controllers' objects alone", () => {
    kubectlOk(
      ["apply", "-f", "-"],
      gateway(ns, "foreign-2019", theirs, [{ name: "admin", port: 2019, protocol: "HTTP" }]),
    );
    kubectlOk(
      ["apply", "-f", "-"],
      httpRoute(ns, "foreign-mirror", {
        parentRefs: [{ name: "foreign" }],
        rules: [
          {
            filters: [
              {
                type: "ExtensionRef",
                extensionRef: { group: "example.com", kind: "Plugin", name: "p" },
              },
            ],
            backendRefs: [{ name: "svc", port: 80 }],
          },
        ],
      }),
    );
    expect(kubectl(["get", "gateway", "foreign-2019", "-n", ns]).code).toBe(0);
    expect(kubectl(["get", "httproute", "foreign-mirror", "-n", ns]).code).toBe(0);
  });
});
