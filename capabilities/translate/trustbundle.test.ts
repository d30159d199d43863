import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createAuthority, generateKeyPair } from "../pki/pki";
import { KubeObject, apply, snapshotOf } from "../snapshot";
import { parseSnapshotYAML } from "../../hack/translate";
import { translate } from "./translate";
import { pemCertificates } from "./backendtls";

const golden = (): KubeObject[] =>
  parseSnapshotYAML(
    readFileSync(join(__dirname, "../../tests/golden/cluster-trust-bundle.in.yaml"), "utf8"),
  );

const ca = (commonName: string): string => {
  const r = createAuthority({
    commonName,
    keys: generateKeyPair(),
    notBefore: new Date(),
    lifetimeDays: 1,
  });
  if (!r.ok) throw new Error(r.error);
  return r.value.certificatePem;
};

/** The CAs the IR trusts for the backend `secure` (BackendTLSPolicy from bundle `backends`). */
function backendCAs(s: ReturnType<typeof snapshotOf>): readonly string[] | undefined {
  const ir = translate(s).gateways[0];
  for (const server of ir.httpServers)
    for (const l of server.listeners)
      for (const e of l.routes)
        if (e.action.type === "forward")
          for (const b of e.action.backends)
            if (b.type === "service" && b.id === "default/secure:443") return b.tls?.caCertificates;
  return undefined;
}

describe("ClusterTrustBundle CAs", () => {
  it("a bundle's new certificates reach the proxies' config (no stale route compilation)", () => {
    const objects = golden();
    const s1 = snapshotOf(objects);
    const before = backendCAs(s1);
    expect(before?.length).toBe(1);
    const bundle = objects.find(
      o => o.kind === "ClusterTrustBundle" && o.metadata.name === "backends",
    )!;
    const pem = ca("rotated backend CA");
    const s2 = apply(s1, {
      type: "upsert",
      kind: "ClusterTrustBundle",
      object: { ...bundle, spec: { trustBundle: pem } } as KubeObject,
    }).snapshot;
    expect(backendCAs(s2)).toEqual(pemCertificates(pem));
    const s3 = apply(s2, { type: "delete", kind: "ClusterTrustBundle", object: bundle }).snapshot;
    // Gone: the policy no longer resolves; the Service is not reached with a stale CA.
    expect(backendCAs(s3)).not.toEqual(pemCertificates(pem));
  });
});
