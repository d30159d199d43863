import {
  BackendTLSPolicyLike,
  backendTLSPolicyProblems,
  backendTLSPolicyStatusProblems,
} from "./backendtlspolicy";
import { problemText } from "./message";
import { snapshotOf } from "../snapshot";
import { translate } from "../translate";

const policy = (
  validation: Record<string, unknown>,
  options?: Record<string, string>,
): BackendTLSPolicyLike => ({
  spec: {
    targetRefs: [{ group: "", kind: "Service", name: "shop" }],
    validation: {
      caCertificateRefs: [{ group: "", kind: "ConfigMap", name: "ca" }],
      ...validation,
    },
    ...(options && { options }),
  },
});

describe("backendTLSPolicyProblems (refused at admission, Invalid in status)", () => {
  it("accepts a hostname, a CA or System trust, and a subjectAltName equal to the hostname", () => {
    expect(backendTLSPolicyProblems(policy({ hostname: "shop.internal" }))).toEqual([]);
    expect(
      backendTLSPolicyProblems(
        policy({ hostname: "shop.internal", wellKnownCACertificates: "System" }),
      ),
    ).toEqual([]);
    expect(
      backendTLSPolicyProblems(
        policy({
          hostname: "shop.internal",
          subjectAltNames: [
            { type: "Hostname", hostname: "shop.internal" },
            { type: "Hostname", hostname: "shop.internal" },
          ],
        }),
      ),
    ).toEqual([]);
  });

  it("refuses an IP address as hostname (no SNI), with the exact message", () => {
    expect(backendTLSPolicyProblems(policy({ hostname: "10.0.0.7" }))).toEqual([
      {
        path: "spec.validation.hostname",
        value: "10.0.0.7",
        message:
          "is an IP address, which TLS cannot send as SNI (RFC 6066): use a DNS name the backend's certificate holds",
      },
    ]);
    // A name with digit labels only in part is a DNS name.
    expect(backendTLSPolicyProblems(policy({ hostname: "10.0.0.7.nip.io" }))).toEqual([]);
  });

  it("admits subjectAltNames (run by our kengine_http transport; per flavour in status)", () => {
    expect(
      backendTLSPolicyProblems(
        policy({
          hostname: "abc.example.com",
          subjectAltNames: [
            { type: "URI", uri: "spiffe://abc.example.com/test-identity" },
            { type: "Hostname", hostname: "*.example.com" },
          ],
        }),
      ),
    ).toEqual([]);
  });

  it("refuses options (the proxy understands none), each by key", () => {
    expect(
      backendTLSPolicyProblems(
        policy({ hostname: "a.b" }, { "example.com/min-version": "1.3", other: "x" }),
      ),
    ).toEqual([
      {
        path: 'spec.options["example.com/min-version"]',
        value: "1.3",
        message:
          "is not a backend TLS option the Kengine proxy understands (it supports none yet): remove it",
      },
      {
        path: 'spec.options["other"]',
        value: "x",
        message:
          "is not a backend TLS option the Kengine proxy understands (it supports none yet): remove it",
      },
    ]);
  });

  it("never refuses what the spec puts in status: an unknown wellKnownCACertificates, bad CA refs", () => {
    expect(
      backendTLSPolicyProblems(
        policy({ hostname: "a.b", wellKnownCACertificates: "example.com/corp-cas" }),
      ),
    ).toEqual([]);
    expect(
      backendTLSPolicyProblems({
        spec: {
          validation: {
            hostname: "a.b",
            caCertificateRefs: [{ group: "", kind: "Secret", name: "missing" }],
          },
        },
      } as never),
    ).toEqual([]);
  });
});

describe("backendTLSPolicyStatusProblems (status only)", () => {
  it("reports a wellKnownCACertificates other than System", () => {
    expect(
      backendTLSPolicyStatusProblems(
        policy({ hostname: "a.b", wellKnownCACertificates: "example.com/corp-cas" }),
      ),
    ).toEqual([
      {
        path: "spec.validation.wellKnownCACertificates",
        value: "example.com/corp-cas",
        message: '"example.com/corp-cas" is not supported; use System',
      },
    ]);
    expect(
      backendTLSPolicyStatusProblems(
        policy({ hostname: "a.b", wellKnownCACertificates: "System" }),
      ),
    ).toEqual([]);
  });
});

describe("the translator agrees with admission", () => {
  // One Service per policy, all used by one route of our Gateway.
  const policies: Record<string, Record<string, unknown>> = {
    clean: { validation: { wellKnownCACertificates: "System", hostname: "a.internal" } },
    "san-same": {
      validation: {
        wellKnownCACertificates: "System",
        hostname: "a.internal",
        subjectAltNames: [{ type: "Hostname", hostname: "a.internal" }],
      },
    },
    "san-uri": {
      validation: {
        wellKnownCACertificates: "System",
        hostname: "a.internal",
        subjectAltNames: [{ type: "URI", uri: "spiffe://a/b" }],
      },
    },
    ip: { validation: { wellKnownCACertificates: "System", hostname: "10.1.2.3" } },
    options: {
      validation: { wellKnownCACertificates: "System", hostname: "a.internal" },
      options: { "example.com/min-version": "1.3" },
    },
    "corp-cas": {
      validation: { wellKnownCACertificates: "example.com/corp", hostname: "a.internal" },
    },
  };
  const names = Object.keys(policies);
  const objects = [
    {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "GatewayClass",
      metadata: { name: "k" },
      spec: { controllerName: "kengine.io/gateway-controller" },
    },
    {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "Gateway",
      metadata: { name: "gw", namespace: "default" },
      spec: { gatewayClassName: "k", listeners: [{ name: "http", port: 80, protocol: "HTTP" }] },
    },
    {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "HTTPRoute",
      metadata: { name: "r", namespace: "default" },
      spec: {
        parentRefs: [{ name: "gw" }],
        rules: names.map(n => ({ backendRefs: [{ name: n, port: 443 }] })),
      },
    },
    ...names.map(n => ({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: n, namespace: "default" },
      spec: { ports: [{ name: "btls", port: 443 }] },
    })),
    ...names.map(n => ({
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "BackendTLSPolicy",
      metadata: { name: n, namespace: "default", creationTimestamp: "2026-01-01T00:00:00Z" },
      spec: { targetRefs: [{ group: "", kind: "Service", name: n }], ...policies[n] },
    })),
  ];

  it("marks Accepted=False/Invalid exactly the policies with problems, naming the same problems", () => {
    const statuses = translate(snapshotOf(objects as never)).statuses.backendTLSPolicies ?? [];
    const accepted = Object.fromEntries(
      statuses.map(s => {
        const c = s.ancestors[0].conditions.find(x => x.type === "Accepted")!;
        return [s.name, { status: c.status, reason: c.reason, message: c.message }];
      }),
    );
    const expected = Object.fromEntries(
      names.map(n => {
        const p = { spec: policies[n] } as BackendTLSPolicyLike;
        const all = [...backendTLSPolicyStatusProblems(p), ...backendTLSPolicyProblems(p)];
        return [
          n,
          all.length === 0
            ? { status: "True", reason: "Accepted", message: "policy accepted" }
            : { status: "False", reason: "Invalid", message: all.map(problemText).join("; ") },
        ];
      }),
    );
    expect(accepted).toEqual(expected);
    // Admission refuses the proxy's problems only: not the status-only one.
    const refused = names.filter(
      n => backendTLSPolicyProblems({ spec: policies[n] } as BackendTLSPolicyLike).length > 0,
    );
    // subjectAltNames run on our proxy (kengine_http): admitted and accepted.
    expect(refused).toEqual(["ip", "options"]);
    expect(accepted["corp-cas"].status).toBe("False");
    expect(accepted["san-same"].status).toBe("True");
    expect(accepted["san-uri"].status).toBe("True");
  });
});
