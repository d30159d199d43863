/**
 * The automatic HTTPS rule as admission sees it: the issuer option is accepted only where it
 * can work (an HTTPS listener that terminates TLS with no certificateRefs), issuer settings the
 * controller cannot use are refused with the field named, and certificate Secret names are
 * always valid Secret names.
 */
import fc from "fast-check";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import {
  ACME_GRANT_FROM,
  ACME_ISSUER_OPTION,
  ACME_LISTENERSET_MESSAGE,
  AcmeAnnotation,
  acmeGatewayParametersProblems,
  acmeGrantOf,
  acmeIssuerOf,
  acmeParametersProblems,
  acmeSecretLabels,
  acmeSecretName,
  isCertificateSecretFor,
  listenerSetAcmeWarnings,
  writtenByController,
} from "./acme";
import { listenerProblems } from "./gateway";
import { gatewayOverrideProblems } from "./overrides";

const https = (tls: object) => ({
  name: "https",
  protocol: "HTTPS",
  port: 443,
  hostname: "a.example.com",
  tls,
});

describe("automatic HTTPS rules", () => {
  it("accepts the issuer option on an HTTPS listener with no certificateRefs only", () => {
    const opt = { options: { [ACME_ISSUER_OPTION]: "le" } };
    expect(listenerProblems("spec.listeners[0]", https(opt))).toEqual([]);
    expect(acmeIssuerOf(https(opt))).toBe("le");
    const withRefs = https({ ...opt, certificateRefs: [{ name: "c" }] });
    expect(acmeIssuerOf(withRefs)).toBeUndefined();
    expect(listenerProblems("spec.listeners[0]", withRefs)).toEqual([
      expect.objectContaining({
        path: `spec.listeners[0].tls.options["${ACME_ISSUER_OPTION}"]`,
        message: expect.stringMatching(
          /only an HTTPS listener that terminates TLS and has no certificateRefs/,
        ),
      }),
    ]);
    const tls = { name: "t", protocol: "TLS", port: 443, tls: { mode: "Passthrough", ...opt } };
    expect(listenerProblems("spec.listeners[1]", tls)).toHaveLength(1);
    expect(
      listenerProblems("spec.listeners[0]", https({ options: { other: "x" } }))[0]?.message,
    ).toMatch(/is not a TLS option .* supports only kengine\.io\/acme-issuer/);
  });

  it("refuses issuer settings the controller cannot use, naming the field", () => {
    expect(
      acmeParametersProblems({
        issuers: [
          { name: "a", server: "https://ok.example/dir" },
          {
            name: "a",
            server: "http://plain.example/dir",
            challenge: "tls-alpn-01",
            caBundle: "nope",
          },
        ],
      }).map(p => p.path),
    ).toEqual([
      "spec.acme.issuers[1].name",
      "spec.acme.issuers[1].challenge",
      "spec.acme.issuers[1].server",
      "spec.acme.issuers[1].caBundle",
    ]);
    expect(acmeParametersProblems(undefined)).toEqual([]);
  });

  it("names certificate Secrets validly for any listener hostname", () => {
    const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/);
    fc.assert(
      fc.property(fc.array(label, { minLength: 1, maxLength: 8 }), labels => {
        const host =
          labels
            .join(".")
            .slice(0, 253)
            .replace(/[.-]+$/, "") || "a";
        const n = acmeSecretName(host);
        expect(n.length).toBeLessThanOrEqual(253);
        // RFC 1123 subdomain: dot-separated labels that start and end alphanumeric
        expect(n).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/);
      }),
    );
    expect(
      acmeSecretName(
        "a".repeat(63) + "." + "b".repeat(63) + "." + "c".repeat(63) + "." + "d".repeat(61),
      ).length,
    ).toBeLessThanOrEqual(253);
  });

  it("refuses grants that are not Same, All or a non-empty Selector, and reads anything malformed as Same", () => {
    const at = (allowedNamespaces: unknown) =>
      acmeParametersProblems({
        issuers: [{ name: "a", server: "https://ok.example/dir", allowedNamespaces }],
      }).map(p => [p.path, p.message]);
    expect(at(undefined)).toEqual([]);
    expect(at({ from: "Same" })).toEqual([]);
    expect(at({ from: "All" })).toEqual([]);
    expect(at({ from: "Selector", selector: { matchLabels: { acme: "yes" } } })).toEqual([]);
    const g = "spec.acme.issuers[0].allowedNamespaces";
    expect(at({ from: "Everyone" })).toEqual([[`${g}.from`, "accepted: Same, All, Selector"]]);
    expect(at({ from: "Selector" })).toEqual([
      [`${g}.selector`, expect.stringMatching(/needs a label selector/)],
    ]);
    expect(at({ from: "Selector", selector: {} })).toEqual([
      [`${g}.selector`, expect.stringMatching(/would select every namespace: say from: All/)],
    ]);
    expect(
      at({ from: "Selector", selector: { matchExpressions: [{ key: "k", operator: "Near" }] } }),
    ).toEqual([[`${g}.selector.matchExpressions[0].operator`, expect.any(String)]]);
    expect(at({ from: "All", selector: { matchLabels: { a: "b" } } })).toEqual([
      [`${g}.selector`, "applies only with from: Selector (from is All)"],
    ]);
    expect(at("All")).toEqual([[g, "must be an object"]]);
    for (const bad of [
      undefined,
      "All",
      { from: "Everyone" },
      { from: "Selector" },
      { from: "Selector", selector: null },
      { from: "Same", selector: { matchLabels: {} } },
    ])
      expect(acmeGrantOf({ allowedNamespaces: bad })).toEqual({ from: "Same" });
    expect(acmeGrantOf({ allowedNamespaces: { from: "All", selector: {} } })).toEqual({
      from: "All",
    });
  });

  it("keeps the grant's values equal to the CRD's enum", () => {
    const crd = parse(
      readFileSync(
        join(__dirname, "../../deploy/crds/gateway.kengine.io_kengineparameters.yaml"),
        "utf8",
      ),
    );
    const issuer =
      crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.acme.properties.issuers
        .items.properties;
    expect(issuer.allowedNamespaces.properties.from.enum).toEqual([...ACME_GRANT_FROM]);
    expect(issuer.allowedNamespaces.properties.from.default).toBe("Same");
  });

  it("refuses spec.acme in a Gateway's own parameters, whatever the class allows", () => {
    expect(acmeGatewayParametersProblems({})).toEqual([]);
    expect(acmeGatewayParametersProblems(undefined)).toEqual([]);
    for (const acme of [{}, { issuers: [] }, { issuers: [{ name: "x", server: "https://x" }] }]) {
      const expected = [
        expect.objectContaining({
          path: "spec.acme",
          message: expect.stringMatching(/^is platform-owned: ACME issuers come only from/),
        }),
      ];
      expect(acmeGatewayParametersProblems({ acme })).toEqual(expected);
      // the rule every stage applies to a Gateway's parameters (admission, status, provisioning)
      expect(
        gatewayOverrideProblems({ acme } as never, {
          allowGatewayOverrides: ["image", "command", "nodeSelector", "tolerations", "affinity"],
        }),
      ).toEqual(expected);
    }
  });

  it("warns at admission for each ListenerSet listener that names an issuer", () => {
    const acmeListener = https({ options: { [ACME_ISSUER_OPTION]: "le" } });
    expect(
      listenerSetAcmeWarnings({
        spec: {
          listeners: [
            { name: "http", protocol: "HTTP", port: 80 },
            acmeListener,
            https({ options: { [ACME_ISSUER_OPTION]: "le" }, certificateRefs: [{ name: "c" }] }),
          ],
        },
      }),
    ).toEqual([
      `spec.listeners[1].tls.options["kengine.io/acme-issuer"]: ${ACME_LISTENERSET_MESSAGE}; stored, its status will say ResolvedRefs=False/InvalidCertificateRef`,
    ]);
    expect(listenerSetAcmeWarnings({})).toEqual([]);
    expect(listenerSetAcmeWarnings({ spec: { listeners: [null, 7, "x"] } })).toEqual([]);
  });

  it("trusts a certificate Secret only with the manager's labels and the exact name", () => {
    const secret = (labels: Record<string, string>, name?: string) => ({
      metadata: {
        labels,
        annotations: (name ? { [AcmeAnnotation.name]: name } : {}) as Record<string, string>,
      },
    });
    const ours = acmeSecretLabels("certificate");
    expect(isCertificateSecretFor(secret(ours, "a.example.com"), "a.example.com")).toBe(true);
    expect(isCertificateSecretFor(secret(ours, "A.Example.com"), "a.example.com")).toBe(true);
    expect(isCertificateSecretFor(secret(ours, "b.example.com"), "a.example.com")).toBe(false);
    expect(isCertificateSecretFor(secret(ours), "a.example.com")).toBe(false);
    expect(isCertificateSecretFor(secret({}, "a.example.com"), "a.example.com")).toBe(false);
    expect(
      isCertificateSecretFor(secret(acmeSecretLabels("account"), "a.example.com"), "a.example.com"),
    ).toBe(false);
    expect(
      isCertificateSecretFor(
        secret({ ...ours, "app.kubernetes.io/managed-by": "someone" }, "a.example.com"),
        "a.example.com",
      ),
    ).toBe(false);
    expect(isCertificateSecretFor(undefined, "a.example.com")).toBe(false);
    expect(
      writtenByController({ metadata: { labels: acmeSecretLabels("account") } }, "account"),
    ).toBe(true);
  });
});
