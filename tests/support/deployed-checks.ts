/**
 * Checks shared by the tests of the module as a cluster runs it (tests/e2e/deployed.test.ts:
 * `npm run build`'s manifests; tests/e2e/helm.test.ts: the Helm chart): admission refuses a
 * route the proxy cannot run with our message, and the sample answers through its Gateway.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { routeCreateEvent, webhooksFailedOpen } from "./audit";
import { jsonpath } from "./demo-gateway";
import { eventually, kubectl, kubectlOk } from "./kube";
import { demoSample } from "./manifests";
import { localDir } from "./paths";
import { get, type Reply } from "./traffic";

/** A route of our class the proxy cannot run: a header name with "*". */
export const badRoute = (ns: string, name = "bad") => ({
  apiVersion: "gateway.networking.k8s.io/v1",
  kind: "HTTPRoute",
  metadata: { name, namespace: ns },
  spec: {
    parentRefs: [{ name: "demo" }],
    rules: [
      {
        filters: [{ type: "RequestHeaderModifier", requestHeaderModifier: { remove: ["X-*"] } }],
        backendRefs: [{ name: "echo", port: 8080 }],
      },
    ],
  },
});

const PROBLEM = 'spec.rules[0].filters[0].requestHeaderModifier.remove[0]: contains "*"';

/** The webhooks the API server recorded as failed open for the create of `ns/name`. */
async function failedOpen(ns: string, name: string): Promise<string[]> {
  const create = await eventually(
    `the audit event of creating HTTPRoute ${ns}/${name}`,
    () => routeCreateEvent(ns, name),
    15_000,
  );
  return webhooksFailedOpen(create);
}

/** For the log of a test that saw a webhook fail open: the API server's reason, the pods' restarts. */
function whyFailedOpen(): string {
  const log = join(localDir, "logs", "kube-apiserver.log");
  const reason = existsSync(log)
    ? (readFileSync(log, "utf8")
        .split("\n")
        .filter(l => l.includes("failing open"))
        .pop() ?? 'no "failing open" line in the API server\'s log')
    : `no ${log}`;
  const pods = kubectl([
    "get",
    "pods",
    "-A",
    "-l",
    "pepr.dev/controller",
    "-o",
    'jsonpath={range .items[*]}{.metadata.name} ready={.status.containerStatuses[0].ready} restarts={.status.containerStatuses[0].restartCount}{"\\n"}{end}',
  ]).stdout;
  return `${reason}\n${pods}`;
}

/**
 * Applies the bad route (the sample must be there) and expects kubectl to print our refusal.
 *
 * Routes go to the webhook that fails open (failurePolicy Ignore, docs/admission.md): while the
 * API server cannot reach our admission pods it stores the route, and the translator reports
 * the same problem in the route's status. A user applying at that moment sees exactly that, so
 * an admitted route passes here only when the API server's audit log says our webhook failed
 * open for that very request; the status must then carry the refusal, and the next try, under
 * a new name, must be refused by admission itself (at most 5 tries, 5 s apart). A route our
 * webhook admitted fails the test.
 */
export async function expectBadRouteRefused(ns: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const name = attempt === 1 ? "bad" : `bad-${attempt}`;
    const r = kubectl(["apply", "-f", "-"], JSON.stringify(badRoute(ns, name)));
    if (r.code !== 0) {
      expect(r.stderr).toContain(`HTTPRoute ${ns}/${name} cannot be run by the Kengine proxy`);
      expect(r.stderr).toContain(PROBLEM);
      expect(kubectl(["get", "httproute", name, "-n", ns]).code).not.toBe(0);
      return;
    }
    const webhooks = await failedOpen(ns, name);
    // without the API server's word that it could not reach our webhook, admission let it in
    expect({ route: `${ns}/${name}`, failedOpen: webhooks }).toEqual({
      route: `${ns}/${name}`,
      failedOpen: [expect.stringMatching(/-others\.pepr\.dev$/)],
    });
    console.warn(
      `HTTPRoute ${ns}/${name} was stored: the API server could not reach ${webhooks.join(", ")} and failed open (try ${attempt})`,
      whyFailedOpen(),
    );
    const accepted = await eventually(
      `HTTPRoute ${ns}/${name} reported Accepted=False in its status`,
      () => {
        const c = jsonpath(
          ["get", "httproute", name, "-n", ns],
          "{.status.parents[0].conditions[?(@.type=='Accepted')].status} {.status.parents[0].conditions[?(@.type=='Accepted')].message}",
        );
        return c.startsWith("False ") ? c : undefined;
      },
      60_000,
    );
    expect(accepted).toContain(PROBLEM);
    kubectlOk(["delete", "httproute", name, "-n", ns]);
    expect(attempt).toBeLessThan(5);
    await new Promise(resolve => setTimeout(resolve, 5_000));
  }
}

/**
 * Applies the sample (hack/samples/demo.yaml) in `ns` with `host`, waits for its Gateway's
 * address and a 200 from the echo backend through it; returns the address and the reply.
 */
export async function sampleServes(
  ns: string,
  host: string,
): Promise<{ address: string; reply: Reply }> {
  kubectlOk(["apply", "-f", "-"], demoSample(ns, host));
  const address = await eventually(
    "the Gateway's address",
    () =>
      jsonpath(["get", "gateway", "demo", "-n", ns], "{.status.addresses[0].value}") || undefined,
    120_000,
  );
  const reply = await eventually(
    "a 200 from the echo backend through the Gateway",
    async () => {
      const res = await get(address, host);
      return res.status === 200 ? res : undefined;
    },
    120_000,
    500,
  );
  return { address, reply };
}
