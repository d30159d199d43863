/**
 * The module's rails, end to end: `pepr dev` registers its webhook with the real API server,
 * denies an HTTPRoute of our class that the proxy cannot run (with our message), stores a
 * valid one and one that belongs to another controller, and its Watch binding sees Gateways.
 */
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlOk } from "../support/kube";
import { PeprDev, startModule } from "../support/module";

const gatewayClass = (name: string, controllerName: string) => `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: ${name}}
spec: {controllerName: ${controllerName}}
`;
const gateway = (ns: string, name: string, cls: string) => `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: ${name}, namespace: ${ns}}
spec:
  gatewayClassName: ${cls}
  listeners: [{name: http, port: 80, protocol: HTTP}]
`;
const route = (ns: string, name: string, parent: string, regex: string) => `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: ${name}, namespace: ${ns}}
spec:
  parentRefs: [{name: ${parent}}]
  rules:
  - matches: [{path: {type: RegularExpression, value: ${JSON.stringify(regex)}}}]
`;

describe("pepr dev against the local cluster", () => {
  let dev: PeprDev;
  let ns: string;
  const suffix = Date.now().toString(36);
  const ours = `kengine-${suffix}`;
  const theirs = `other-${suffix}`;

  beforeAll(async () => {
    ns = createNamespace("rails");
    kubectlOk(
      ["apply", "-f", "-"],
      gatewayClass(ours, "kengine.io/gateway-controller") +
        "---" +
        gatewayClass(theirs, "example.com/other"),
    );
    // In the repository, as a developer runs it.
    dev = await startModule({ inPlace: true });
  });

  afterAll(async () => {
    await dev?.stop();
    kubectl(["delete", "gatewayclass", ours, theirs, "--ignore-not-found"]);
    if (ns) deleteNamespace(ns);
  });

  it("sees Gateways through its Watch bindings and reports them in status", async () => {
    kubectlOk(["apply", "-f", "-"], gateway(ns, "gw", ours));
    const accepted = await eventually("the Gateway to be Accepted", () => {
      const s = kubectl([
        "get",
        "gateway",
        "gw",
        "-n",
        ns,
        "-o",
        "jsonpath={.status.conditions[?(@.type=='Accepted')].status}",
      ]).stdout;
      return s === "True" ? s : undefined;
    });
    expect(accepted).toBe("True");
    const cls = kubectlOk([
      "get",
      "gatewayclass",
      ours,
      "-o",
      "jsonpath={.status.conditions[?(@.type=='Accepted')].status}",
    ]);
    expect(cls).toBe("True");
    // Another controller's Gateway is not ours to touch.
    kubectlOk(["apply", "-f", "-"], gateway(ns, "foreign", theirs));
    expect(
      kubectlOk([
        "get",
        "gateway",
        "foreign",
        "-n",
        ns,
        "-o",
        "jsonpath={.status.conditions[?(@.type=='Accepted')].reason}",
      ]),
    ).not.toBe("Accepted");
  });

  it("denies an HTTPRoute of our class with an empty regular expression, naming the field", () => {
    kubectlOk(["apply", "-f", "-"], gateway(ns, "gw", ours));
    const r = kubectl(["apply", "-f", "-"], route(ns, "bad", "gw", ""));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`HTTPRoute ${ns}/bad cannot be run by the Kengine proxy`);
    expect(r.stderr).toContain("spec.rules[0].matches[0].path.value: must not be empty");
    expect(kubectl(["get", "httproute", "bad", "-n", ns]).code).not.toBe(0);
  });

  it("stores a valid HTTPRoute of our class", () => {
    kubectlOk(["apply", "-f", "-"], route(ns, "good", "gw", "/api/v[0-9]+"));
    expect(
      kubectlOk(["get", "httproute", "good", "-n", ns, "-o", "jsonpath={.metadata.name}"]),
    ).toBe("good");
  });

  it("leaves routes of other controllers' Gateways alone", () => {
    kubectlOk(["apply", "-f", "-"], gateway(ns, "foreign", theirs));
    kubectlOk(["apply", "-f", "-"], route(ns, "foreign-route", "foreign", ""));
    expect(kubectl(["get", "httproute", "foreign-route", "-n", ns]).code).toBe(0);
  });

  it("admits a route whose Gateway does not exist yet", () => {
    kubectlOk(["apply", "-f", "-"], route(ns, "early", "not-yet", ""));
    expect(kubectl(["get", "httproute", "early", "-n", ns]).code).toBe(0);
  });
});
