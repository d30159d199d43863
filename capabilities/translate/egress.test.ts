import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseSnapshotYAML } from "../../hack/translate";
import type { BackendIR } from "../ir";
import { KubeObject, snapshotOf } from "../snapshot";
import { DEFAULT_EGRESS } from "../validation/egress";
import {
  EgressPolicy,
  egressProblem,
  endpointRefusal,
  gatedBackends,
  gatedEndpoints,
  gatedMirrors,
  namedRefusal,
  proxyAddresses,
} from "./egress";
import { translate } from "./translate";

const policy = (over: Partial<EgressPolicy> = {}): EgressPolicy => ({
  gatewayClass: "c",
  gateway: "ns/gw",
  flavor: "Bundled",
  settings: { externalHostnames: "Allowed", deniedCIDRs: ["10.0.0.0/16", "fd00::/8"] },
  proxyAddresses: ["10.1.0.5"],
  ...over,
});
const ep = (address: string, port = 80) => ({ address, port });
const service = (id: string, addresses: string[]): BackendIR => ({
  type: "service",
  id,
  weight: 1,
  endpoints: addresses.map(a => ep(a)),
  protocol: "http",
});
const named = (id: string, host: string): BackendIR => ({
  ...service(id, [host]),
  ...{ egressGuard: { deny: [] } },
});

describe("egress per Gateway", () => {
  it("names: refused unless the class allows them and the flavour guards dials", () => {
    expect(namedRefusal(policy())).toBeUndefined();
    expect(namedRefusal(policy({ settings: DEFAULT_EGRESS }))).toMatch(
      /not allowed for GatewayClass c .*spec\.egress\.externalHostnames: Allowed/,
    );
    for (const flavor of ["Caddy", "Kengine"] as const)
      expect(namedRefusal(policy({ flavor }))).toMatch(
        new RegExp(`the ${flavor} proxy flavour has no dial guard`),
      );
  });

  it("addresses: the Gateway's own proxy pods and the class's denied ranges", () => {
    const p = policy();
    expect(endpointRefusal(p, "10.1.0.5")).toMatch(/proxy pod of Gateway ns\/gw/);
    expect(endpointRefusal(p, "10.0.200.1")).toMatch(/inside 10\.0\.0\.0\/16/);
    expect(endpointRefusal(p, "fd12::1")).toMatch(/inside fd00::\/8/);
    expect(endpointRefusal(p, "10.2.0.1")).toBeUndefined();
    expect(gatedEndpoints(p, [ep("10.1.0.5"), ep("10.2.0.1"), ep("10.0.0.9")])).toEqual([
      ep("10.2.0.1"),
    ]);
  });

  it("backends: a refused name keeps its share as invalid; a guarded one carries the class's ranges", () => {
    const backends = [named("XBackend t/x", "api.example.com"), service("t/web:80", ["10.2.0.1"])];
    expect(gatedBackends(policy(), backends)).toEqual([
      { ...backends[0], egressGuard: { deny: ["10.0.0.0/16", "fd00::/8"] } },
      backends[1],
    ]);
    expect(gatedBackends(policy({ settings: DEFAULT_EGRESS }), backends)).toEqual([
      { type: "invalid", id: "XBackend t/x", weight: 1 },
      backends[1],
    ]);
    // Nothing to change: the same array (entries keep their identity from build to build).
    const plain = [service("t/web:80", ["10.2.0.1"])];
    expect(gatedBackends(policy(), plain)).toBe(plain);
  });

  it("mirrors: refused names and mirrors left without endpoints are not sent", () => {
    const m = [
      { id: "XBackend t/x", endpoints: [ep("api.example.com")], egressGuard: { deny: [] } },
      { id: "t/pod:80", endpoints: [ep("10.1.0.5")] },
    ];
    expect(gatedMirrors(policy({ flavor: "Caddy" }), m)).toBeUndefined();
    expect(gatedMirrors(policy(), m)).toEqual([
      { ...m[0], egressGuard: { deny: ["10.0.0.0/16", "fd00::/8"] } },
    ]);
  });

  it("the route's message names a few of what was left out, and counts the rest", () => {
    const p = policy({ settings: { ...DEFAULT_EGRESS, deniedCIDRs: ["10.0.0.0/8"] } });
    const t = [
      named("XBackend t/x", "api.example.com"),
      service(
        "t/web:80",
        ["10.0.0.1", "10.0.0.2", "10.0.0.3", "192.0.2.1"].map(a => a),
      ),
    ];
    const msg = egressProblem(p, t as never);
    expect(msg).toMatch(/^XBackend t\/x \(ExternalHostname api\.example\.com\) is not used: /);
    expect(msg).toMatch(/t\/web:80: endpoint 10\.0\.0\.1 left out: it is inside 10\.0\.0\.0\/8/);
    expect(msg).toMatch(/; and 1 more$/);
    expect(msg).not.toMatch(/192\.0\.2\.1/);
    expect(egressProblem(policy(), [service("t/web:80", ["10.2.0.1"])] as never)).toBeUndefined();
  });
});

describe("proxy pod addresses", () => {
  const slice = (name: string, service: string, addresses: string[], labels = {}): KubeObject =>
    ({
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: {
        name,
        namespace: "ns",
        labels: { "kubernetes.io/service-name": service, ...labels },
      },
      addressType: "IPv4",
      endpoints: addresses.map(a => ({ addresses: [a] })),
    }) as KubeObject;
  const gw = {
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "Gateway",
    metadata: { name: "gw", namespace: "ns" },
    spec: { gatewayClassName: "c", listeners: [] },
  };

  it("come from the managed Services' EndpointSlices and a bring-your-own Service's", () => {
    const s = snapshotOf([
      gw as KubeObject,
      slice("a-1", "gw-kengine-admin", ["10.1.0.6", "10.1.0.5"]),
      slice("b-1", "gw-kengine", ["10.1.0.5"]),
      {
        apiVersion: "v1",
        kind: "Service",
        metadata: {
          name: "mine",
          namespace: "ns",
          labels: { "gateway.kengine.io/owning-gateway": "gw" },
        },
      } as KubeObject,
      slice("c-1", "mine", ["10.9.0.1"]),
      slice("d-1", "other", ["10.3.0.1"]),
    ]);
    expect(proxyAddresses(s, gw as never)).toEqual(["10.1.0.5", "10.1.0.6", "10.9.0.1"]);
  });

  it("a new proxy pod's address is left out of the routes at the next build", () => {
    const golden = parseSnapshotYAML(
      readFileSync(join(__dirname, "../../tests/golden/egress.in.yaml"), "utf8"),
    );
    const dials = (objects: KubeObject[]) => {
      const r = translate(snapshotOf(objects));
      const gw = r.gateways.find(g => g.name === "guarded")!;
      return JSON.stringify(gw.httpServers).match(/10\.2\.0\.7/g)?.length ?? 0;
    };
    expect(dials(golden)).toBeGreaterThan(0);
    const moved = golden.map(o =>
      o.metadata.name === "guarded-kengine-admin-1"
        ? ({
            ...o,
            endpoints: [{ addresses: ["10.2.0.7"], conditions: { ready: true } }],
          } as KubeObject)
        : o,
    );
    expect(dials(moved)).toBe(0);
  });
});

describe("egress in the golden's Gateways", () => {
  const golden = (): KubeObject[] =>
    parseSnapshotYAML(readFileSync(join(__dirname, "../../tests/golden/egress.in.yaml"), "utf8"));

  it("an ExternalAuth backendRef to a name: guarded where allowed, the listener not served where not", () => {
    const r = translate(snapshotOf(golden()));
    const listener = (gw: string) =>
      r.statuses.gateways.find(g => g.name === gw)!.listeners.find(l => l.name === "authed")!;
    expect(listener("closed").conditions.find(c => c.type === "ResolvedRefs")).toMatchObject({
      status: "False",
      reason: "RefNotPermitted",
      message: expect.stringMatching(/XBackend default\/authz .*externalHostnames: Allowed/),
    });
    const closed = r.gateways.find(g => g.name === "closed")!;
    expect(JSON.stringify(closed)).not.toContain("authz.example.com");
    const guarded = r.gateways.find(g => g.name === "guarded")!;
    const filters = guarded.httpServers.flatMap(s => s.listeners.flatMap(l => l.filters ?? []));
    expect(filters).toEqual([
      expect.objectContaining({
        endpoints: [{ address: "authz.example.com", port: 8443 }],
        egressGuard: { deny: ["10.0.0.0/16"] },
      }),
    ]);
  });

  it("a Gateway's own parameters cannot allow what its class does not", () => {
    const objects = golden().map(o =>
      o.kind === "Gateway" && o.metadata.name === "closed"
        ? ({
            ...o,
            spec: {
              ...(o as KubeObject & { spec: object }).spec,
              infrastructure: {
                parametersRef: {
                  group: "gateway.kengine.io",
                  kind: "KengineParameters",
                  name: "own",
                },
              },
            },
          } as KubeObject)
        : o,
    );
    objects.push({
      apiVersion: "gateway.kengine.io/v1alpha1",
      kind: "KengineParameters",
      metadata: { name: "own", namespace: "default" },
      spec: { egress: { externalHostnames: "Allowed" } },
    } as KubeObject);
    const r = translate(snapshotOf(objects));
    expect(
      r.statuses.gateways
        .find(g => g.name === "closed")!
        .conditions.find(c => c.type === "Accepted"),
    ).toMatchObject({
      status: "False",
      reason: "InvalidParameters",
      message: expect.stringContaining(
        "spec.egress: has effect only in the parameters a GatewayClass references",
      ),
    });
    expect(r.gateways.find(g => g.name === "closed")).toBeUndefined();
  });
});
