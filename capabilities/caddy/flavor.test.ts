import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseSnapshotYAML } from "../../hack/translate";
import { withProxyFlavor } from "../../tests/support/flavor";
import { snapshotOf } from "../snapshot";
import { translate } from "../translate";
import { DEFAULT_PROXY_FLAVOR, ProxyFlavor } from "../flavor/proxy-flavor";
import { WILDCARD_SNI_DEPTH, renderCaddyJSON, toCaddyConfig } from "./index";

/** The https golden's config as the proxies of `flavor` get it. */
function httpsConfig(flavor: ProxyFlavor): string {
  const objects = parseSnapshotYAML(
    readFileSync(join(__dirname, "../../tests/golden/https.in.yaml"), "utf8"),
  );
  const [ir] = translate(snapshotOf(withProxyFlavor(objects, flavor))).gateways;
  expect(ir.flavor ?? DEFAULT_PROXY_FLAVOR).toBe(flavor);
  return renderCaddyJSON(toCaddyConfig(ir));
}

describe("server names in the TLS handshake, per proxy flavour", () => {
  it("Bundled and Caddy match a wildcard listener hostname with sni_regexp", () => {
    for (const flavor of ["Bundled", "Caddy"] as const)
      expect(httpsConfig(flavor)).toContain('"sni_regexp"');
  });

  it("Kengine (Caddy 2.8 has no sni_regexp) gets sni patterns of 1 to WILDCARD_SNI_DEPTH labels", () => {
    const json = httpsConfig("Kengine");
    expect(json).not.toContain("sni_regexp");
    const policies = (
      JSON.parse(json) as {
        apps: { http: { servers: Record<string, { tls_connection_policies?: object[] }> } };
      }
    ).apps.http.servers;
    const matches = Object.values(policies)
      .flatMap(s => s.tls_connection_policies ?? [])
      .map(p => (p as { match?: { sni?: string[] } }).match?.sni)
      .filter((m): m is string[] => m !== undefined);
    const wildcard = matches.find(m => m[0] === "*.example.com");
    expect(wildcard).toHaveLength(WILDCARD_SNI_DEPTH);
    expect(wildcard?.[1]).toBe("*.*.example.com");
    expect(wildcard?.[WILDCARD_SNI_DEPTH - 1]).toBe(
      "*.".repeat(WILDCARD_SNI_DEPTH) + "example.com",
    );
    expect(matches).toContainEqual(["www.example.com"]);
  });
});

describe("retries of attempts without a response, per proxy flavour", () => {
  /** The retry settings of each reverse_proxy in the retry-errors golden, as `flavor` gets it. */
  function retries(flavor: ProxyFlavor): { retries?: number; retry_match?: object[] }[] {
    const objects = parseSnapshotYAML(
      readFileSync(join(__dirname, "../../tests/golden/retry-errors.in.yaml"), "utf8"),
    );
    const [ir] = translate(snapshotOf(withProxyFlavor(objects, flavor))).gateways;
    const found: { retries?: number; retry_match?: object[] }[] = [];
    JSON.stringify(toCaddyConfig(ir), (key, value: unknown) => {
      if (key === "load_balancing") found.push(value as { retries?: number });
      return value;
    });
    return found;
  }
  const TRANSPORT = "{http.reverse_proxy.is_transport_error} == true";

  it("Bundled and Caddy retry transport errors of every method, with or without status codes", () => {
    for (const flavor of ["Bundled", "Caddy"] as const) {
      const lbs = retries(flavor).filter(lb => lb.retries !== undefined);
      // In the order of the dispatch routes: compared as a sorted list.
      expect(lbs.map(lb => JSON.stringify(lb.retry_match)).sort()).toEqual(
        [
          [{ expression: TRANSPORT }],
          [{ expression: TRANSPORT }],
          [{ expression: `${TRANSPORT} || {http.reverse_proxy.status_code} in [500, 503]` }],
          [{ expression: `${TRANSPORT} || {http.reverse_proxy.status_code} in [500]` }],
        ]
          .map(m => JSON.stringify(m))
          .sort(),
      );
    }
  });

  it("only Bundled bounds retries by the request timeout with kengine_deadline", () => {
    const deadlines = (flavor: ProxyFlavor): string[] => {
      const objects = parseSnapshotYAML(
        readFileSync(join(__dirname, "../../tests/golden/retry-errors.in.yaml"), "utf8"),
      );
      const [ir] = translate(snapshotOf(withProxyFlavor(objects, flavor))).gateways;
      const found: string[] = [];
      JSON.stringify(toCaddyConfig(ir), (_key, value: unknown) => {
        const v = value as { handler?: string; timeout?: string } | null;
        if (v?.handler === "kengine_deadline") found.push(v.timeout ?? "");
        return value;
      });
      return found;
    };
    // The two rules with retry and a request timeout (5s, 500ms).
    expect(deadlines("Bundled").sort()).toEqual(["5000ms", "500ms"]);
    expect(deadlines("Caddy")).toEqual([]);
    expect(deadlines("Kengine")).toEqual([]);
  });

  it("Kengine (Caddy 2.8 has no is_transport_error) keeps Caddy's default: GET only, no retry_match", () => {
    const json = JSON.stringify(retries("Kengine"));
    expect(json).not.toContain("is_transport_error");
    expect(json).not.toContain("retry_match");
    // The rule with status codes is dropped on Kengine; the two others keep their retries.
    expect(retries("Kengine").filter(lb => lb.retries !== undefined)).toHaveLength(2);
  });
});
