import {
  caCertificateRefKindProblem,
  clientCertificateRefKindProblem,
  gatewayProblems,
  gatewayTLSWarnings,
} from "./gateway";

describe("gatewayProblems", () => {
  it("refuses reserved ports and TLS options, each with its listener's path", () => {
    const problems = gatewayProblems({
      spec: {
        listeners: [
          { name: "ok", port: 80 },
          { name: "admin", port: 2019 },
          {
            name: "mgmt",
            port: 19443,
            tls: { options: { "example.com/cipher": "x", other: "y" } },
          },
          { name: "ready", port: 19080 },
        ],
      },
    });
    expect(problems.map(p => p.path)).toEqual([
      "spec.listeners[1].port",
      "spec.listeners[2].port",
      'spec.listeners[2].tls.options["example.com/cipher"]',
      'spec.listeners[2].tls.options["other"]',
      "spec.listeners[3].port",
    ]);
    expect(problems[0].message).toBe(
      "is reserved by the Kengine proxy pod (2019, 19443, 19080: Caddy's default admin port, management and readiness): choose another port",
    );
  });
  it("leaves conflicts, missing certificates and unknown protocols to status", () => {
    expect(
      gatewayProblems({
        spec: {
          listeners: [
            {
              name: "a",
              port: 443,
              protocol: "HTTPS",
              tls: { certificateRefs: [{ name: "missing" }] },
            },
            { name: "b", port: 443, protocol: "HTTP" },
            { name: "c", port: 9, protocol: "example.com/custom" },
          ] as never,
        },
      }),
    ).toEqual([]);
  });
});

describe("Gateway spec.tls", () => {
  it("reads CA certificates from core ConfigMaps only", () => {
    expect(
      caCertificateRefKindProblem({ group: "", kind: "ConfigMap", name: "ca" }),
    ).toBeUndefined();
    expect(caCertificateRefKindProblem({ group: "", kind: "Service", name: "x" })).toMatch(
      /Service.core is not a supported CA certificate kind/,
    );
    expect(
      caCertificateRefKindProblem({ group: "example.io", kind: "ConfigMap", name: "x" }),
    ).toMatch(/ConfigMap.example.io/);
  });

  it("reads the backend client certificate from core Secrets only (kind Secret by default)", () => {
    expect(clientCertificateRefKindProblem({ name: "c" })).toBeUndefined();
    expect(clientCertificateRefKindProblem({ group: "", kind: "WrongKind", name: "c" })).toMatch(
      /WrongKind.core/,
    );
    expect(clientCertificateRefKindProblem({ group: "x.io", kind: "Secret", name: "c" })).toMatch(
      /Secret.x.io/,
    );
  });

  it("warns about what status will say: wrong kinds and the insecure fallback", () => {
    expect(gatewayTLSWarnings({ spec: {} })).toEqual([]);
    const warnings = gatewayTLSWarnings({
      spec: {
        tls: {
          backend: { clientCertificateRef: { group: "", kind: "ConfigMap", name: "c" } },
          frontend: {
            default: {
              validation: { caCertificateRefs: [{ group: "", kind: "ConfigMap", name: "ok" }] },
            },
            perPort: [
              {
                port: 8443,
                tls: {
                  validation: {
                    mode: "AllowInsecureFallback",
                    caCertificateRefs: [{ group: "", kind: "Secret", name: "s" }],
                  },
                },
              },
            ],
          },
        },
      },
    });
    expect(warnings).toEqual([
      expect.stringMatching(
        /^spec.tls.backend.clientCertificateRef: .*ResolvedRefs=False\/InvalidClientCertificateRef$/,
      ),
      expect.stringMatching(
        /^spec.tls.frontend.perPort\[0\].tls.validation.caCertificateRefs\[0\]: Secret.core .*InvalidCACertificateKind$/,
      ),
      expect.stringMatching(/AllowInsecureFallback.*InsecureFrontendValidationMode=True$/),
    ]);
  });
});
