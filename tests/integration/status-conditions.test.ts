/**
 * Status as users read it: real objects applied to the local cluster, the module running under
 * `pepr dev` (one start for the file), and every condition read back with kubectl. Reasons are
 * the Gateway API v1.6.1 spelling (apis/v1/*_types.go); the conformance suite agrees on the
 * listener ones (a conflicted listener is Accepted=False with the conflict's reason).
 *
 * One GatewayClass whose KengineParameters ask for no proxy pods (status does not need them);
 * the Gateway of the address tests gets one proxy and a Service of a load-balancer class the
 * local load balancer leaves alone, so the test plays the load balancer by writing the Service's
 * status.loadBalancer itself.
 */
import { kubeClient } from "../../capabilities/kube/client";
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlOk } from "../support/kube";
import { PeprDev, startModule } from "../support/module";

interface Cond {
  type: string;
  status: string;
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime?: string;
}
interface Obj {
  metadata: { generation?: number };
  status?: {
    conditions?: Cond[];
    addresses?: { type?: string; value: string; routability?: string }[];
    listeners?: { name: string; attachedRoutes: number; conditions: Cond[] }[];
    attachedListenerSets?: number;
    parents?: { controllerName: string; parentRef: { name: string }; conditions: Cond[] }[];
  };
}

const CTRL = "kengine.io/gateway-controller";
const get = (kind: string, ns: string | undefined, name: string): Obj | undefined => {
  const r = kubectl(["get", kind, name, ...(ns ? ["-n", ns] : []), "-o", "json"]);
  return r.code === 0 ? (JSON.parse(r.stdout) as Obj) : undefined;
};
const apply = (yaml: string) => kubectlOk(["apply", "-f", "-"], yaml);
/** A Gateway's status.addresses as [type, value, routability] triples (JSON, for comparison). */
const addressTriples = (o: Obj | undefined): string =>
  JSON.stringify((o?.status?.addresses ?? []).map(x => [x.type, x.value, x.routability]));
/** Load-balancer addresses as the status reports them: routability "" (GEP-5093). */
const lbAddresses = (...list: readonly (readonly [string, string])[]): string =>
  JSON.stringify(list.map(([type, value]) => [type, value, ""]));
const find = (cs: Cond[] | undefined, type: string) => cs?.find(c => c.type === type);
/** "status/reason" of a condition, e.g. "False/NoMatchingParent". */
const sr = (cs: Cond[] | undefined, type: string) => {
  const c = find(cs, type);
  return c ? `${c.status}/${c.reason}` : undefined;
};

/** Our parent entry's conditions on a route, once they match `want` (type → "status/reason"). */
async function routeConditions(
  ns: string,
  name: string,
  want: Record<string, string>,
  kind = "httproute",
): Promise<Cond[]> {
  let seen = "";
  try {
    return await eventually(
      `${kind} ${ns}/${name} to have ${JSON.stringify(want)}`,
      () => {
        const o = get(kind, ns, name);
        const ours = o?.status?.parents?.filter(p => p.controllerName === CTRL) ?? [];
        seen = JSON.stringify(
          ours.map(p => p.conditions.map(c => `${c.type}=${c.status}/${c.reason}`)),
        );
        if (ours.length !== 1) return undefined;
        const cs = ours[0].conditions;
        const ok = Object.entries(want).every(([t, v]) => sr(cs, t) === v);
        if (!ok) return undefined;
        // Every condition carries the generation it describes and a transition time.
        for (const c of cs) {
          expect(c.observedGeneration).toBe(o!.metadata.generation);
          expect(c.lastTransitionTime).toMatch(/^\d{4}-\d\d-\d\dT/);
        }
        return cs;
      },
      90_000,
    );
  } catch (e) {
    throw new Error(`${String(e)}; last seen: ${seen}`);
  }
}

describe("status conditions written for real objects", () => {
  let dev: PeprDev;
  let a: string; // the Gateways' namespace
  let b: string; // another namespace
  const cls = `conditions-${Date.now().toString(36)}`;

  const route = (ns: string, name: string, parent: string, extra = "", backend = "echo") => `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: ${name}, namespace: ${ns}}
spec:
  parentRefs: [${parent}]
${extra}
  rules:
  - backendRefs: [${backend}]
`;

  beforeAll(async () => {
    a = createNamespace("cond-a");
    b = createNamespace("cond-b");
    apply(`
apiVersion: gateway.kengine.io/v1alpha1
kind: KengineParameters
metadata: {name: none, namespace: ${a}}
spec:
  proxy: {replicas: 0}
---
apiVersion: gateway.kengine.io/v1alpha1
kind: KengineParameters
metadata: {name: external-lb, namespace: ${a}}
spec:
  proxy: {replicas: 1}
  service: {type: LoadBalancer, loadBalancerClass: example.com/external}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: ${cls}}
spec:
  controllerName: ${CTRL}
  parametersRef: {group: gateway.kengine.io, kind: KengineParameters, name: none, namespace: ${a}}
---
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: ${a}}
spec: {ports: [{name: http, port: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: remote, namespace: ${b}}
spec: {ports: [{name: http, port: 8080}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: main, namespace: ${a}}
spec:
  gatewayClassName: ${cls}
  listeners:
  - {name: web, port: 80, protocol: HTTP, hostname: web.example.com}
  - {name: any, port: 8080, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}
---
apiVersion: v1
kind: Secret
metadata: {name: bad-cert, namespace: ${a}}
type: kubernetes.io/tls
stringData: {tls.crt: "not a certificate", tls.key: "not a key"}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: listeners, namespace: ${a}}
spec:
  gatewayClassName: ${cls}
  allowedListeners: {namespaces: {from: Same}}
  listeners:
  - {name: a, port: 80, protocol: HTTP, hostname: a.example.com}
  - {name: b, port: 80, protocol: HTTP, hostname: b.example.com}
  - {name: p-http, port: 9080, protocol: HTTP}
  - {name: p-tls, port: 9080, protocol: TLS, tls: {mode: Passthrough}}
  - name: bad-cert
    port: 8443
    protocol: HTTPS
    hostname: secure.example.com
    tls: {certificateRefs: [{name: bad-cert}]}
  - name: no-cert
    port: 8443
    protocol: HTTPS
    hostname: other.example.com
    tls: {certificateRefs: [{name: missing-secret}]}
---
# The API server refuses two listeners of one Gateway with the same port, protocol and
# hostname, so an indistinct listener comes from a ListenerSet: it loses to the Gateway's own.
apiVersion: gateway.networking.k8s.io/v1
kind: ListenerSet
metadata: {name: clash, namespace: ${a}}
spec:
  parentRef: {name: listeners}
  listeners:
  - {name: a-again, port: 80, protocol: HTTP, hostname: a.example.com}
  - {name: extra, port: 8081, protocol: HTTP}
`);
    dev = await startModule();
  });

  afterAll(async () => {
    await dev?.stop();
    kubectl(["delete", "gatewayclass", cls, "--ignore-not-found"]);
    if (a) deleteNamespace(a);
    if (b) deleteNamespace(b);
  });

  const port = "port: 8080";
  const backend = (name: string, ns?: string) =>
    `{name: ${name}${ns ? `, namespace: ${ns}` : ""}, ${port}}`;

  it("GatewayClass: Accepted, SupportedVersion and the features we implement", async () => {
    const gc = await eventually("the GatewayClass status", () => {
      const o = get("gatewayclass", undefined, cls);
      return find(o?.status?.conditions, "SupportedVersion") ? o : undefined;
    });
    expect(sr(gc.status?.conditions, "Accepted")).toBe("True/Accepted");
    expect(sr(gc.status?.conditions, "SupportedVersion")).toBe("True/SupportedVersion");
    for (const c of gc.status!.conditions!)
      expect(c.observedGeneration).toBe(gc.metadata.generation);
    const features = (gc.status as { supportedFeatures?: { name: string }[] }).supportedFeatures;
    expect(features?.map(f => f.name)).toEqual(expect.arrayContaining(["Gateway", "HTTPRoute"]));
    const main = await eventually("Gateway main Accepted", () => {
      const o = get("gateway", a, "main");
      return sr(o?.status?.conditions, "Accepted") === "True/Accepted" ? o : undefined;
    });
    expect(main.status?.listeners?.map(l => l.name)).toEqual(["web", "any"]);
  });

  it("valid route: Accepted and ResolvedRefs, counted on its listener", async () => {
    apply(
      route(
        a,
        "valid",
        "{name: main, sectionName: web}",
        "  hostnames: [web.example.com]",
        backend("echo"),
      ),
    );
    await routeConditions(a, "valid", {
      Accepted: "True/Accepted",
      ResolvedRefs: "True/ResolvedRefs",
    });
    await eventually("listener web to count 1 route", () => {
      const l = get("gateway", a, "main")?.status?.listeners?.find(x => x.name === "web");
      return l?.attachedRoutes === 1 ? l : undefined;
    });
  });

  it("route to a section the Gateway does not have: NoMatchingParent", async () => {
    apply(route(a, "no-section", "{name: main, sectionName: nope}", "", backend("echo")));
    await routeConditions(a, "no-section", { Accepted: "False/NoMatchingParent" });
  });

  it("hostnames that match no listener: NoMatchingListenerHostname", async () => {
    apply(
      route(
        a,
        "other-host",
        "{name: main, sectionName: web}",
        "  hostnames: [other.org]",
        backend("echo"),
      ),
    );
    await routeConditions(a, "other-host", { Accepted: "False/NoMatchingListenerHostname" });
  });

  it("route from a namespace the listener does not allow: NotAllowedByListeners", async () => {
    apply(
      route(b, "foreign", `{name: main, namespace: ${a}, sectionName: web}`, "", backend("remote")),
    );
    await routeConditions(b, "foreign", { Accepted: "False/NotAllowedByListeners" });
  });

  it("missing backend: Accepted, ResolvedRefs=False BackendNotFound", async () => {
    apply(route(a, "no-backend", "{name: main, sectionName: any}", "", backend("nowhere")));
    const cs = await routeConditions(a, "no-backend", {
      Accepted: "True/Accepted",
      ResolvedRefs: "False/BackendNotFound",
    });
    expect(find(cs, "ResolvedRefs")?.message).toContain("nowhere");
  });

  it("cross-namespace backend: RefNotPermitted until a ReferenceGrant allows it", async () => {
    apply(route(a, "cross", "{name: main, sectionName: any}", "", backend("remote", b)));
    const before = await routeConditions(a, "cross", {
      Accepted: "True/Accepted",
      ResolvedRefs: "False/RefNotPermitted",
    });
    apply(`
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: allow-routes-from-a, namespace: ${b}}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: ${a}}]
  to: [{group: "", kind: Service}]
`);
    const after = await routeConditions(a, "cross", {
      Accepted: "True/Accepted",
      ResolvedRefs: "True/ResolvedRefs",
    });
    // Accepted did not change: its transition time stays.
    expect(find(after, "Accepted")?.lastTransitionTime).toBe(
      find(before, "Accepted")?.lastTransitionTime,
    );
    // Both accepted routes on "any" are counted, the refused ones nowhere.
    await eventually("listener any to count 2 routes", () => {
      const l = get("gateway", a, "main")?.status?.listeners?.find(x => x.name === "any");
      return l?.attachedRoutes === 2 ? l : undefined;
    });
    const web = get("gateway", a, "main")?.status?.listeners?.find(x => x.name === "web");
    expect(web?.attachedRoutes).toBe(1);
  });

  it("conflicting listeners and invalid certificates are reported per listener", async () => {
    const gw = await eventually("the listeners Gateway's listener status", () => {
      const o = get("gateway", a, "listeners");
      return (o?.status?.listeners?.length ?? 0) === 6 ? o : undefined;
    });
    const l = (n: string) => gw.status!.listeners!.find(x => x.name === n)!.conditions;
    expect(sr(gw.status?.conditions, "Accepted")).toBe("True/ListenersNotValid");
    const msg = find(gw.status?.conditions, "Accepted")!.message;
    for (const n of ["p-http", "p-tls", "bad-cert", "no-cert"]) expect(msg).toContain(n);
    for (const n of ["p-http", "p-tls"]) {
      expect(sr(l(n), "Conflicted")).toBe("True/ProtocolConflict");
      expect(sr(l(n), "Accepted")).toBe("False/ProtocolConflict");
      expect(sr(l(n), "Programmed")).toBe("False/ProtocolConflict");
    }
    for (const n of ["a", "b"]) {
      expect(sr(l(n), "Conflicted")).toBe("False/NoConflicts");
      expect(sr(l(n), "Accepted")).toBe("True/Accepted");
      expect(sr(l(n), "ResolvedRefs")).toBe("True/ResolvedRefs");
    }
    for (const n of ["bad-cert", "no-cert"]) {
      expect(sr(l(n), "ResolvedRefs")).toBe("False/InvalidCertificateRef");
      expect(sr(l(n), "Programmed")).toBe("False/Invalid");
    }
    expect(find(l("bad-cert"), "ResolvedRefs")!.message).toContain("no PEM CERTIFICATE block");
    expect(find(l("no-cert"), "ResolvedRefs")!.message).toContain("not found");

    const set = await eventually("the ListenerSet's listener status", () => {
      const o = get("listenerset", a, "clash");
      return (o?.status?.listeners?.length ?? 0) === 2 ? o : undefined;
    });
    const sl = (n: string) => set.status!.listeners!.find(x => x.name === n)!.conditions;
    expect(sr(sl("a-again"), "Conflicted")).toBe("True/HostnameConflict");
    expect(sr(sl("a-again"), "Accepted")).toBe("False/HostnameConflict");
    expect(find(sl("a-again"), "Conflicted")!.message).toContain("a.example.com");
    expect(sr(sl("a-again"), "Programmed")).toBe("False/HostnameConflict");
    expect(sr(sl("extra"), "Accepted")).toBe("True/Accepted");
    expect(sr(set.status?.conditions, "Accepted")).toBe("True/ListenersNotValid");
    // the Gateway counts the ListenerSet attached to it (Accepted: it has a valid listener)
    await eventually("the Gateway's attachedListenerSets", () => {
      const o = get("gateway", a, "listeners");
      return o?.status?.attachedListenerSets === 1 ? o : undefined;
    });
  });

  describe("addresses", () => {
    const svc = "lb-kengine";
    const programmed = () => find(get("gateway", a, "lb")?.status?.conditions, "Programmed");
    const setIngress = (ips: string[]) =>
      kubectlOk([
        "patch",
        "service",
        svc,
        "-n",
        a,
        "--subresource=status",
        "--type=merge",
        "-p",
        JSON.stringify({ status: { loadBalancer: { ingress: ips.map(ip => ({ ip })) } } }),
      ]);

    it("no address yet: Programmed=False AddressNotAssigned; then True with the address", async () => {
      apply(`
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: lb, namespace: ${a}}
spec:
  gatewayClassName: ${cls}
  infrastructure:
    parametersRef: {group: gateway.kengine.io, kind: KengineParameters, name: external-lb}
  listeners: [{name: http, port: 80, protocol: HTTP}]
`);
      await eventually("the proxies' Service", () => get("service", a, svc));
      // (Before the Service exists the message says so; then it waits for an address.)
      const first = await eventually("Programmed=False AddressNotAssigned", () => {
        const c = programmed();
        return c?.reason === "AddressNotAssigned" && /get an address/.test(c.message)
          ? c
          : undefined;
      });
      expect(first.status).toBe("False");
      expect(get("gateway", a, "lb")?.status?.addresses ?? []).toEqual([]);

      // Not 127.20.0.0/16: the local load balancer clears addresses of its own range from Services
      // it does not serve. Nothing is sent to these documentation addresses (RFC 5737).
      setIngress(["192.0.2.10"]);
      const gw = await eventually(
        "Programmed=True with the address",
        () => {
          const o = get("gateway", a, "lb");
          return find(o?.status?.conditions, "Programmed")?.status === "True" ? o : undefined;
        },
        120_000,
      );
      expect(addressTriples(gw)).toBe(lbAddresses(["IPAddress", "192.0.2.10"]));
    });

    it("a changed Service address reaches the Gateway's status.addresses", async () => {
      const client = kubeClient();
      const path = `/apis/gateway.networking.k8s.io/v1/namespaces/${a}/gateways/lb`;
      const addresses = async () => addressTriples(await client.request<Obj>("GET", path));
      const delays: number[] = [];
      for (const ingress of [
        [{ ip: "192.0.2.11" }],
        [{ ip: "192.0.2.12" }, { hostname: "lb.example.test" }],
      ]) {
        const want = lbAddresses(
          ...ingress.map(i =>
            i.ip ? (["IPAddress", i.ip] as const) : (["Hostname", i.hostname!] as const),
          ),
        );
        const t0 = Date.now();
        kubectlOk([
          "patch",
          "service",
          svc,
          "-n",
          a,
          "--subresource=status",
          "--type=merge",
          "-p",
          JSON.stringify({ status: { loadBalancer: { ingress } } }),
        ]);
        const patched = Date.now();
        await eventually(
          `status.addresses ${want}`,
          async () => ((await addresses()) === want ? true : undefined),
          30_000,
          10,
        );
        delays.push(Date.now() - patched);
        console.log(
          `Service address ${want}: in the Gateway's status ${Date.now() - patched} ms after kubectl patch returned (${patched - t0} ms for kubectl itself)`,
        );
      }
      expect(delays).toHaveLength(2);
    });

    it("Service deleted: addresses removed and the Gateway says why", async () => {
      kubectlOk(["delete", "service", svc, "-n", a, "--wait=false"]);
      // The controller re-creates the Service; until a load balancer gives it an address the
      // Gateway has none and says so.
      const c = await eventually("addresses removed with AddressNotAssigned", () => {
        const o = get("gateway", a, "lb");
        const p = find(o?.status?.conditions, "Programmed");
        return (o?.status?.addresses ?? []).length === 0 && p?.reason === "AddressNotAssigned"
          ? p
          : undefined;
      });
      expect(c.status).toBe("False");
      expect(c.message).toMatch(/Service/);
    });
  });

  describe("static addresses (the local load balancer assigns 127.20.0.0/16)", () => {
    // Outside the range the local load balancer picks from by itself (127.20.0-63.x), and
    // apart from the conformance run's 127.20.250.1. 192.0.2.1 (RFC 5737) it never assigns.
    const usable = "127.20.251.7";
    const fromParameters = "127.20.251.8";
    const gwCond = (name: string, type: string) =>
      find(get("gateway", a, name)?.status?.conditions, type);
    const serviceOf = (gw: string) =>
      get("service", a, `${gw}-kengine`) as
        | (Obj & {
            metadata: { uid?: string };
            spec?: { loadBalancerIP?: string };
            status?: { loadBalancer?: { ingress?: { ip?: string }[] } };
          })
        | undefined;

    it("unsupported type: Accepted=False UnsupportedAddress; unusable: AddressNotUsable; usable: assigned", async () => {
      apply(`
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: static, namespace: ${a}}
spec:
  gatewayClassName: ${cls}
  addresses: [{type: example.com/magic, value: "x"}, {value: "192.0.2.1"}]
  listeners: [{name: http, port: 80, protocol: HTTP}]
`);
      const refused = await eventually("Accepted=False UnsupportedAddress", () => {
        const c = gwCond("static", "Accepted");
        return c?.reason === "UnsupportedAddress" ? c : undefined;
      });
      expect(refused.status).toBe("False");
      expect(refused.message).toContain("example.com/magic");
      expect(serviceOf("static")).toBeUndefined(); // not accepted: nothing provisioned

      kubectlOk([
        "patch",
        "gateway",
        "static",
        "-n",
        a,
        "--type=merge",
        "-p",
        JSON.stringify({ spec: { addresses: [{ value: "192.0.2.1" }] } }),
      ]);
      const unusable = await eventually(
        "Programmed=False AddressNotUsable",
        () => {
          const c = gwCond("static", "Programmed");
          return c?.reason === "AddressNotUsable" ? c : undefined;
        },
        90_000,
      );
      expect(unusable.status).toBe("False");
      expect(unusable.message).toContain("192.0.2.1 (spec.addresses) cannot be used");
      expect(sr(get("gateway", a, "static")?.status?.conditions, "Accepted")).toBe("True/Accepted");
      const first = serviceOf("static")!;
      expect(first.spec?.loadBalancerIP).toBe("192.0.2.1");
      // The load balancer gave it another address, which is not reported as the Gateway's.
      expect(first.status?.loadBalancer?.ingress?.[0]?.ip).toMatch(/^127\.20\./);
      expect(get("gateway", a, "static")?.status?.addresses ?? []).toEqual([]);

      kubectlOk([
        "patch",
        "gateway",
        "static",
        "-n",
        a,
        "--type=merge",
        "-p",
        JSON.stringify({ spec: { addresses: [{ type: "IPAddress", value: usable }] } }),
      ]);
      const gw = await eventually(
        "the usable address in status.addresses",
        () => {
          const o = get("gateway", a, "static");
          return addressTriples(o) === lbAddresses(["IPAddress", usable]) ? o : undefined;
        },
        90_000,
      );
      // The Service was made again to get the address (uid changed); the address is real.
      const second = serviceOf("static")!;
      expect(second.metadata.uid).not.toBe(first.metadata.uid);
      expect(second.spec?.loadBalancerIP).toBe(usable);
      // (the local load balancer's ipMode: Proxy, so that kube-proxy leaves the address to it:
      // hack/node/README.md)
      expect(second.status?.loadBalancer?.ingress).toEqual([{ ip: usable, ipMode: "Proxy" }]);
      // No proxy pods in this class: Programmed waits for them, no longer for the address.
      expect(sr(gw.status?.conditions, "Programmed")).toBe("False/Pending");
    });

    it("a static address from KengineParameters spec.addresses", async () => {
      apply(`
apiVersion: gateway.kengine.io/v1alpha1
kind: KengineParameters
metadata: {name: pinned, namespace: ${a}}
spec:
  proxy: {replicas: 0}
  addresses: [{value: "${fromParameters}"}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: pinned, namespace: ${a}}
spec:
  gatewayClassName: ${cls}
  infrastructure:
    parametersRef: {group: gateway.kengine.io, kind: KengineParameters, name: pinned}
  listeners: [{name: http, port: 80, protocol: HTTP}]
`);
      await eventually(
        "the parameters' address in status.addresses",
        () =>
          addressTriples(get("gateway", a, "pinned")) === lbAddresses(["IPAddress", fromParameters])
            ? true
            : undefined,
        90_000,
      );
      expect(serviceOf("pinned")?.spec?.loadBalancerIP).toBe(fromParameters);
    });
  });
});
