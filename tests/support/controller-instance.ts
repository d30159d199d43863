/**
 * One controller instance as its own process (node --import tsx), so a test can kill it for real
 * (SIGKILL: no Lease release, no goodbye). The reconciler lists and watches the API server
 * itself, as under `pepr dev`, but without the webhook server. Its API requests carry the User-Agent `kengine-gateway/<identity>`, so the
 * API server's audit log names the instance that made them.
 *
 *   node --import tsx tests/support/controller-instance.ts NAMESPACE IDENTITY LEASE
 *
 * stdout: one JSON line per event: {"started":true}, {"leader":bool} on every change,
 * {"fleet":"pushed"|"adopted"|...}, {"startupRetry":request} and {"notServed":kind} (start-up). SIGTERM stops it gracefully (the Lease is released).
 */
import { kubeClient, userAgent } from "../../capabilities/kube/client";
import { DEFAULT_PROXY_SETTINGS } from "../../capabilities/provision";
import { Reconciler } from "../../capabilities/reconcile";
import { ingressStatusAddressesFromEnv } from "../../capabilities/reconcile/ingress-status";

/** The election timing the handover test uses: short, so a killed leader is replaced soon. */
export const INSTANCE_ELECTION = {
  leaseDurationMs: 4000,
  renewDeadlineMs: 3000,
  retryPeriodMs: 500,
};

async function main(): Promise<void> {
  const [namespace, identity, lease] = process.argv.slice(2);
  if (!namespace || !identity || !lease)
    throw new Error("usage: controller-instance.ts NAMESPACE IDENTITY LEASE");
  const say = (o: object) => process.stdout.write(`${JSON.stringify(o)}\n`);
  const r = new Reconciler({
    kube: kubeClient(undefined, { userAgent: userAgent(identity) }),
    log: {
      // automatic HTTPS: every order and its result, for the ACME suites
      info: (m, meta) => {
        if (m.startsWith("acme")) say({ acme: m, ...meta });
      },
      // start-up retries and kinds not served, for the start-up fault test
      warn: (m, meta) => {
        if (m.startsWith("acme")) say({ acme: m, ...meta });
        else if (m.startsWith("start-up request failed")) say({ startupRetry: meta?.request });
        else if (m.startsWith("kind not served")) say({ notServed: meta?.kind });
      },
      debug: () => {},
      error: (m, meta) => process.stderr.write(`${m} ${JSON.stringify(meta ?? {})}\n`),
    },
    namespace,
    identity,
    election: { name: lease, ...INSTANCE_ELECTION },
    defaults: { ...DEFAULT_PROXY_SETTINGS, replicas: 1 },
    onFleetEvent: e => say({ fleet: e.type }),
    // KENGINE_INGRESS_STATUS_ADDRESSES, as the deployed controller reads it
    ingressStatusAddresses: ingressStatusAddressesFromEnv(process.env),
    // KG_ACME_BACKOFF_MS: the ACME suites' short back-off after a failed order
    ...(process.env["KG_ACME_BACKOFF_MS"] && {
      acme: {
        backoff: {
          baseMs: Number(process.env["KG_ACME_BACKOFF_MS"]),
          maxMs: 4 * Number(process.env["KG_ACME_BACKOFF_MS"]),
        },
      },
    }),
  });
  await r.start();
  say({ started: true });
  let leading = false;
  const parent = process.ppid;
  setInterval(() => {
    if (r.isLeader() !== leading) say({ leader: (leading = r.isLeader()) });
    if (process.ppid !== parent) process.exit(1); // the test is gone: never outlive it
  }, 100);
  process.once("SIGTERM", () => {
    void r.stop().finally(() => {
      process.exit(0);
    });
  });
}

if (require.main === module)
  main().catch(e => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  });
