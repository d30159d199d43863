/**
 * Checks shared by the tests of the module as a cluster runs it (tests/e2e/deployed.test.ts:
 * `npm run build`'s manifests; tests/e2e/helm.test.ts: the Helm chart): admission refuses a
 * route the proxy cannot run with our message, and the sample answers through its Gateway.
 */
import { jsonpath } from "./demo-gateway";
import { eventually, kubectl, kubectlOk } from "./kube";
import { demoSample } from "./manifests";
import { get, type Reply } from "./traffic";

/** A route of our class the proxy cannot run: a header name with "*". */
export const badRoute = (ns: string) => ({
  apiVersion: "gateway.networking.k8s.io/v1",
  kind: "HTTPRoute",
  metadata: { name: "bad", namespace: ns },
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

/** Applies the bad route (the sample must be there) and expects kubectl to print our refusal. */
export function expectBadRouteRefused(ns: string): void {
  const r = kubectl(["apply", "-f", "-"], JSON.stringify(badRoute(ns)));
  expect(r.code).not.toBe(0);
  expect(r.stderr).toContain(`HTTPRoute ${ns}/bad cannot be run by the Kengine proxy`);
  expect(r.stderr).toContain(
    'spec.rules[0].filters[0].requestHeaderModifier.remove[0]: contains "*"',
  );
  expect(kubectl(["get", "httproute", "bad", "-n", ns]).code).not.toBe(0);
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
