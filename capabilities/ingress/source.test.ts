import type { V1Ingress } from "@kubernetes/client-node";
import { convertIngress } from "./convert";
import { onIngress, sourceIngress } from "./source";

const ing: V1Ingress = {
  metadata: { name: "shop", namespace: "apps", uid: "u" },
  spec: {
    tls: [{ hosts: ["a.example"], secretName: "c" }],
    rules: [
      {
        host: "a.example",
        http: {
          paths: [
            {
              path: "/x",
              pathType: "Prefix",
              backend: { service: { name: "w", port: { number: 1 } } },
            },
            {
              path: "/y",
              pathType: "Exact",
              backend: { service: { name: "w", port: { number: 2 } } },
            },
          ],
        },
      },
    ],
  },
};
const out = convertIngress(ing, { gateway: { namespace: "infra", name: "g" } }, () => undefined);

describe("sourceIngress", () => {
  it("names the Ingress of every synthetic object, and of no other", () => {
    for (const o of [...out.httpRoutes, ...out.listenerSets])
      expect(sourceIngress(o)).toEqual({ namespace: "apps", name: "shop" });
    expect(sourceIngress({ metadata: { labels: {} } })).toBeUndefined();
    expect(sourceIngress({})).toBeUndefined();
  });
});

describe("onIngress", () => {
  it("maps a rule's problem to the Ingress path it came from; the rest to spec", () => {
    const route = out.httpRoutes[0];
    const p = { path: "spec.rules[1].matches[0].path.value", value: "/y", message: "m" };
    expect(onIngress(route, p)).toEqual({ ...p, path: "spec.rules[0].http.paths[1]" });
    expect(onIngress(route, { ...p, path: "spec.rules[7]" }).path).toBe("spec");
    expect(onIngress(route, { ...p, path: "spec.parentRefs[0]" }).path).toBe("spec");
    expect(onIngress({ metadata: { annotations: { x: "1" } } }, p).path).toBe("spec");
  });
});
