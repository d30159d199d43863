/**
 * Heap kept per kubernetes-fluent-client request: `node --expose-gc --import
 * tsx hack/bench/heap-kfc.ts [requests] [tls|plain] [ours]` answers `K8s(Lease).Get` (with `ours`:
 * the election's Lease store, election/kube-store.ts) from a loopback API stand-in (HTTPS with a
 * CA of its own when `tls`) and prints the heap used after full garbage
 * collections before and after `requests` sequential requests, and the sockets still open.
 */
import { createServer as createHttp } from "node:http";
import { createServer as createHttps } from "node:https";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createAuthority,
  generateKeyPair,
  issueServerCertificate,
} from "../../capabilities/pki/pki";
import { heapUsedMiB } from "./heap-used";

heapUsedMiB(); // fails early without --expose-gc
const n = Number(process.argv[2] ?? 1000);
const tls = process.argv[3] === "tls";
/** `ours`: the same reads through election/kube-store.ts (the controller's own client). */
const ours = process.argv[4] === "ours";
const must = <T>(r: { ok: true; value: T } | { ok: false; error: unknown }): T => {
  if (!r.ok) throw new Error(String(r.error));
  return r.value;
};

async function main(): Promise<void> {
  const lease = JSON.stringify({
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: { name: "l", namespace: "ns", resourceVersion: "1" },
    spec: { holderIdentity: "x", leaseDurationSeconds: 15 },
  });
  let open = 0;
  const handler = (_req: unknown, res: import("node:http").ServerResponse) => {
    res.setHeader("content-type", "application/json");
    res.end(lease);
  };
  const dir = mkdtempSync(join(tmpdir(), "kg-heap-kfc-"));
  let server;
  const cluster: Record<string, unknown> = {};
  if (tls) {
    const now = new Date(Date.now() - 60_000);
    const ca = must(
      createAuthority({
        commonName: "kfc CA",
        keys: generateKeyPair(),
        notBefore: now,
        lifetimeDays: 2,
      }),
    );
    const cert = must(
      issueServerCertificate(ca, {
        commonName: "127.0.0.1",
        dnsNames: ["localhost"],
        ipAddresses: ["127.0.0.1"],
        keys: generateKeyPair(),
        notBefore: now,
        lifetimeDays: 1,
      } as never),
    );
    server = createHttps({ cert: cert.certificatePem, key: cert.privateKey.reveal() }, handler);
    cluster["certificate-authority-data"] = Buffer.from(ca.certificatePem).toString("base64");
  } else {
    server = createHttp(handler);
    cluster["insecure-skip-tls-verify"] = true;
  }
  // idle connections stay open until the client closes them (Node's default closes them after
  // 5 s; an API server keeps them far longer)
  server.keepAliveTimeout = 0;
  server.on("connection", s => {
    open++;
    s.on("close", () => open--);
  });
  await new Promise<void>(r => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  cluster.server = `${tls ? "https" : "http"}://${tls ? "localhost" : "127.0.0.1"}:${port}`;
  writeFileSync(
    join(dir, "kubeconfig"),
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "c", cluster }],
      users: [{ name: "u", user: { token: "t" } }],
      contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
      "current-context": "c",
    }),
  );
  process.env.KUBECONFIG = join(dir, "kubeconfig");
  let get: () => Promise<unknown>;
  if (ours) {
    // the election's store over the controller's own client (election/kube-store.ts)
    const { kubeLeaseStore } = await import("../../capabilities/election");
    const store = kubeLeaseStore("ns", "l");
    get = () => store.get();
  } else {
    const { K8s, GenericKind } = await import("kubernetes-fluent-client");
    class Lease extends GenericKind {}
    const kind = { group: "coordination.k8s.io", version: "v1", kind: "Lease", plural: "leases" };
    get = () => K8s(Lease, { kindOverride: kind }).InNamespace("ns").Get("l");
  }
  await get(); // modules loaded
  const before = heapUsedMiB();
  for (let i = 0; i < n; i++) await get();
  const after = heapUsedMiB();
  console.log(
    JSON.stringify({
      requests: n,
      tls,
      client: ours ? "kube/client.ts" : "kubernetes-fluent-client",
      heapBeforeMiB: before,
      heapAfterMiB: after,
      perRequestKiB: Math.round(((after - before) * 1024 * 10) / n) / 10,
      openConnections: open,
      rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20),
    }),
  );
  process.exit(0);
}
main().catch(e => {
  console.error(e);
  process.exit(1);
});
