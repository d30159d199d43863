import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseSnapshotYAML } from "../../hack/translate";
import { withProxyFlavor } from "../../tests/support/flavor";
import { snapshotOf } from "../snapshot";
import { translate } from "../translate";
import { DEFAULT_PROXY_FLAVOR, ProxyFlavor } from "../translate/proxy-flavor";
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
