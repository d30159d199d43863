/**
 * The automatic HTTPS rule as admission sees it: the issuer option is accepted only where it
 * can work (an HTTPS listener that terminates TLS with no certificateRefs), issuer settings the
 * controller cannot use are refused with the field named, and certificate Secret names are
 * always valid Secret names.
 */
import fc from "fast-check";
import { ACME_ISSUER_OPTION, acmeIssuerOf, acmeParametersProblems, acmeSecretName } from "./acme";
import { listenerProblems } from "./gateway";

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
});
