/**
 * An IngressClass served by KengineParameters, on the local cluster (docs/ingress.md, "A fleet
 * of its own"): the class gets managed proxies of its own in the parameters' namespace, owned by
 * the IngressClass, before any Ingress; an Ingress of the class in a tenant namespace is served
 * by them on real traffic and shows their Service's address in status.loadBalancer; a tenant's
 * HTTPRoute and ListenerSet naming the class's Gateway are refused with a reason, and its
 * ListenerSet's port never reaches the Service; an Ingress's ingress-nginx `auth-url` naming an
 * authorization Service of another namespace answers 500 until a ReferenceGrant allows it, then
 * 401, 403 or the backend as that Service says, with the granted headers and the original URL;
 * deleting the class removes the proxies.
 */
import { createNamespace, deleteNamespace, eventually, kubectl, kubectlOk } from "../support/kube";
import { PeprDev, startModule } from "../support/module";
import { ScenarioRow, jsonpath, writeScenarioRows } from "../support/demo-gateway";
import { demoSample } from "../support/manifests";
import { proxyPods } from "../support/proxy-pods";
import { call, get } from "../support/traffic";

/**
 * A real authorization server (Caddy): `Bearer good` is granted (X-User: alice, and what it
 * was asked, echoed as X-Seen-*), `Bearer banned` gets 403, anyone else 401 with a challenge.
 */
const AUTH_CONFIG = {
  admin: { disabled: true },
  apps: {
    http: {
      servers: {
        auth: {
          listen: [":8080"],
          automatic_https: { disable: true },
          routes: [
            {
              match: [{ header: { Authorization: ["Bearer good"] } }],
              handle: [
                {
                  handler: "headers",
                  response: {
                    set: {
                      "X-User": ["alice"],
                      "X-Seen-Url": ["{http.request.header.X-Original-URL}"],
                      "X-Seen-Method": ["{http.request.method} {http.request.uri}"],
                    },
                  },
                },
                { handler: "static_response", status_code: 200 },
              ],
            },
            {
              match: [{ header: { Authorization: ["Bearer banned"] } }],
              handle: [{ handler: "static_response", status_code: 403 }],
            },
            {
              handle: [
                {
                  handler: "headers",
                  response: { set: { "WWW-Authenticate": ['Bearer realm="e2e"'] } },
                },
                { handler: "static_response", status_code: 401 },
              ],
            },
          ],
        },
      },
    },
  },
};

const authServer = (ns: string) => [
  {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "auth", namespace: ns },
    data: { "caddy.json": JSON.stringify(AUTH_CONFIG) },
  },
  {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "auth", namespace: ns },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: "auth" } },
      template: {
        metadata: { labels: { app: "auth" } },
        spec: {
          automountServiceAccountToken: false,
          containers: [
            {
              name: "caddy",
              image: "docker.io/library/caddy:2.11",
              command: ["caddy", "run", "--config", "/etc/auth/caddy.json"],
              env: [
                { name: "XDG_CONFIG_HOME", value: "/var/lib/auth/config" },
                { name: "XDG_DATA_HOME", value: "/var/lib/auth/data" },
              ],
              ports: [{ containerPort: 8080 }],
              volumeMounts: [
                { name: "config", mountPath: "/etc/auth", readOnly: true },
                { name: "data", mountPath: "/var/lib/auth" },
              ],
            },
          ],
          volumes: [
            { name: "config", configMap: { name: "auth" } },
            { name: "data", emptyDir: {} },
          ],
        },
      },
    },
  },
  {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "auth", namespace: ns },
    spec: { selector: { app: "auth" }, ports: [{ port: 8080, targetPort: 8080 }] },
  },
];

const HOST = "fleet.ingress.test";

/** What the controller made for a fleet Gateway in a namespace, as `kind/name` lines. */
const ownedBy = (gateway: string) => (ns: string) =>
  kubectlOk([
    "get",
    "deployment,service,secret,configmap",
    "-n",
    ns,
    "-l",
    `gateway.networking.k8s.io/gateway-name=${gateway}`,
    "-o",
    "name",
  ]).trim();

describe("an IngressClass with proxies of its own", () => {
  let dev: PeprDev | undefined;
  let infra: string;
  let team: string;
  const className = `fleet-${Date.now().toString(36)}`;
  const gateway = `ingress-${className}`;
  const proxies = `${gateway}-kengine`;
  const owned = ownedBy(gateway);
  const started = Date.now();
  const rows: ScenarioRow[] = [];

  beforeAll(async () => {
    dev = await startModule();
    infra = createNamespace("fleet-infra");
    team = createNamespace("fleet-team");
    // The sample's echo backend (and its Gateway, which this test leaves alone) in the tenant's namespace.
    kubectlOk(["apply", "-f", "-"], demoSample(team, "demo.fleet.test"));
    kubectlOk(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "gateway.kengine.io/v1alpha1",
        kind: "KengineParameters",
        metadata: { name: "edge", namespace: infra },
        spec: { proxy: { replicas: 1 } },
      }),
    );
  }, 420_000);

  afterAll(async () => {
    writeScenarioRows("ingressFleet", "tests/e2e/ingress-fleet.test.ts", started, rows);
    await dev?.stop();
    kubectl(["delete", "ingressclass", className, "--ignore-not-found"]);
    if (team) deleteNamespace(team);
    if (infra) deleteNamespace(infra);
  });

  it("makes the class's proxies, owned by the IngressClass, before any Ingress", async () => {
    kubectlOk(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "networking.k8s.io/v1",
        kind: "IngressClass",
        metadata: {
          name: className,
          annotations: { "kengine.io/ingress-nginx-annotations": "true" },
        },
        spec: {
          controller: "kengine.io/ingress-controller",
          parameters: {
            apiGroup: "gateway.kengine.io",
            kind: "KengineParameters",
            scope: "Namespace",
            namespace: infra,
            name: "edge",
          },
        },
      }),
    );
    const uid = jsonpath(["get", "ingressclass", className], "{.metadata.uid}");
    const owner = await eventually(
      "the class's proxies' Deployment",
      () =>
        jsonpath(
          ["get", "deployment", proxies, "-n", infra, "--ignore-not-found"],
          "{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].uid}",
        ) || undefined,
      120_000,
    );
    expect(owner).toBe(`IngressClass/${uid}`);
    const ready = await eventually(
      "one ready proxy pod",
      () => {
        const pods = proxyPods(infra, gateway).filter(p => !p.deleting);
        return pods.length === 1 && pods[0]!.ready ? pods : undefined;
      },
      180_000,
    );
    expect(ready).toHaveLength(1);
    // No Gateway object: the class's Gateway exists only in the controller.
    expect(kubectl(["get", "gateway", gateway, "-n", infra]).code).not.toBe(0);
    rows.push({
      scenario: "the class's own proxies",
      proved:
        "Deployment owned by the IngressClass (uid), 1 ready pod (the parameters' replicas), no Gateway object",
      checks: 3,
    });
  });

  it("serves an Ingress of the class from a tenant namespace, with the proxies' address", async () => {
    kubectlOk(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "networking.k8s.io/v1",
        kind: "Ingress",
        metadata: { name: "shop", namespace: team },
        spec: {
          ingressClassName: className,
          rules: [
            {
              host: HOST,
              http: {
                paths: [
                  {
                    path: "/",
                    pathType: "Prefix",
                    backend: { service: { name: "echo", port: { name: "http" } } },
                  },
                ],
              },
            },
          ],
        },
      }),
    );
    const address = await eventually(
      "status.loadBalancer of the Ingress",
      () =>
        jsonpath(["get", "ingress", "shop", "-n", team], "{.status.loadBalancer.ingress[0].ip}") ||
        undefined,
      120_000,
    );
    const service = jsonpath(
      ["get", "service", proxies, "-n", infra],
      "{.status.loadBalancer.ingress[0].ip}",
    );
    expect(address).toBe(service);
    const r = await eventually(
      "a 200 from the class's proxies",
      async () => {
        const res = await get(address, HOST, "/items");
        return res.status === 200 ? res : undefined;
      },
      90_000,
    );
    expect(r.body).toMatch(new RegExp(`"namespace":\\s*"${team}"`));
    expect((await get(address, "unknown.ingress.test", "/")).status).toBe(404);
    rows.push({
      scenario: "an Ingress on the class's proxies",
      proved:
        "status.loadBalancer is the proxies' Service address; the host answers 200 from the tenant's echo, another host 404",
      checks: 3,
    });
  });

  it("refuses a tenant's HTTPRoute and ListenerSet naming the class's Gateway", async () => {
    kubectlOk(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "HTTPRoute",
        metadata: {
          name: "sneaky",
          namespace: team,
          labels: { "ingress.kengine.io/synthetic": "true" },
          annotations: { "ingress.kengine.io/ingress": `${team}/shop` },
        },
        spec: {
          parentRefs: [{ name: gateway, namespace: infra }],
          hostnames: ["sneaky.ingress.test"],
          rules: [{ backendRefs: [{ name: "echo", port: 8080 }] }],
        },
      }),
    );
    kubectlOk(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "gateway.networking.k8s.io/v1",
        kind: "ListenerSet",
        metadata: { name: "extra-port", namespace: team },
        spec: {
          parentRef: { name: gateway, namespace: infra },
          listeners: [{ name: "raw", port: 8081, protocol: "HTTP" }],
        },
      }),
    );
    const route = await eventually(
      "the route's Accepted condition",
      () =>
        jsonpath(
          ["get", "httproute", "sneaky", "-n", team],
          "{.status.parents[0].conditions[?(@.type=='Accepted')].reason}|{.status.parents[0].conditions[?(@.type=='Accepted')].message}",
        ) || undefined,
      60_000,
    );
    expect(route).toBe(
      `NotAllowedByListeners|Gateway ${infra}/${gateway} serves only the Ingresses of IngressClass ${className}`,
    );
    const ls = await eventually(
      "the ListenerSet's Accepted condition",
      () =>
        jsonpath(
          ["get", "listenerset", "extra-port", "-n", team],
          "{.status.conditions[?(@.type=='Accepted')].reason}",
        ) || undefined,
      60_000,
    );
    expect(ls).toBe("NotAllowed");
    const address = jsonpath(
      ["get", "ingress", "shop", "-n", team],
      "{.status.loadBalancer.ingress[0].ip}",
    );
    expect((await get(address, "sneaky.ingress.test", "/")).status).toBe(404);
    expect(
      jsonpath(["get", "service", proxies, "-n", infra], "{.spec.ports[*].port}").split(" "),
    ).toEqual(["80"]);
    rows.push({
      scenario: "tenants cannot attach to the class's Gateway",
      proved:
        "an HTTPRoute wearing the synthetic label is NotAllowedByListeners and not served (404); a ListenerSet is NotAllowed and its port is not on the Service",
      checks: 4,
    });
  });

  it("asks an ingress-nginx auth-url's Service first, once a ReferenceGrant allows it", async () => {
    const address = jsonpath(
      ["get", "ingress", "shop", "-n", team],
      "{.status.loadBalancer.ingress[0].ip}",
    );
    const HOSTNAME = "private.ingress.test";
    kubectlOk(
      ["apply", "-f", "-"],
      JSON.stringify({ apiVersion: "v1", kind: "List", items: authServer(infra) }),
    );
    kubectlOk(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "networking.k8s.io/v1",
        kind: "Ingress",
        metadata: {
          name: "private",
          namespace: team,
          annotations: {
            "nginx.ingress.kubernetes.io/auth-url": `http://auth.${infra}.svc.cluster.local:8080/verify?from=e2e`,
            "nginx.ingress.kubernetes.io/auth-response-headers": "X-User,X-Seen-Url,X-Seen-Method",
          },
        },
        spec: {
          ingressClassName: className,
          rules: [
            {
              host: HOSTNAME,
              http: {
                paths: [
                  {
                    path: "/",
                    pathType: "Prefix",
                    backend: { service: { name: "echo", port: { name: "http" } } },
                  },
                ],
              },
            },
          ],
        },
      }),
    );
    // The Service is another namespace's: without a grant the Ingress answers 500, never the backend.
    const ungranted = await eventually(
      "a 500 while the authorization Service is not granted",
      async () => {
        const r = await call(address, HOSTNAME, "/items", "GET", { Authorization: "Bearer good" });
        return r.status === 500 ? r : undefined;
      },
      90_000,
    );
    expect(ungranted.status).toBe(500);
    kubectlOk(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "gateway.networking.k8s.io/v1beta1",
        kind: "ReferenceGrant",
        metadata: { name: "auth-for-team", namespace: infra },
        spec: {
          from: [{ group: "gateway.networking.k8s.io", kind: "HTTPRoute", namespace: team }],
          to: [{ group: "", kind: "Service", name: "auth" }],
        },
      }),
    );
    const anonymous = await eventually(
      "a 401 from the authorization Service",
      async () => {
        const r = await call(address, HOSTNAME, "/items");
        return r.status === 401 ? r : undefined;
      },
      90_000,
    );
    expect(anonymous.headers["www-authenticate"]).toBe('Bearer realm="e2e"');
    const banned = await call(address, HOSTNAME, "/items", "GET", {
      Authorization: "Bearer banned",
    });
    expect(banned.status).toBe(403);
    const granted = await call(address, HOSTNAME, "/items?q=1", "GET", {
      Authorization: "Bearer good",
      "X-User": "admin",
    });
    expect(granted.status).toBe(200);
    const echoed = JSON.parse(granted.body) as { headers: Record<string, string[]> };
    expect(echoed.headers["X-User"]).toEqual(["alice"]);
    expect(echoed.headers["X-Seen-Url"]).toEqual([`http://${HOSTNAME}/items?q=1`]);
    expect(echoed.headers["X-Seen-Method"]).toEqual(["GET /verify?from=e2e"]);
    rows.push({
      scenario: "ingress-nginx auth-url",
      proved:
        "500 while the other namespace's authorization Service is not granted; then 401 with its challenge, 403, and 200 with X-User from the Service (the client's own replaced), X-Original-URL and a GET to the URL's exact path",
      checks: 7,
    });
  });

  it("reports an IngressClass whose parameters name nothing usable as an Event on it", async () => {
    const broken = `${className}-broken`;
    kubectlOk(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "networking.k8s.io/v1",
        kind: "IngressClass",
        metadata: { name: broken },
        spec: {
          controller: "kengine.io/ingress-controller",
          parameters: {
            kind: "ConfigMap",
            scope: "Namespace",
            namespace: infra,
            name: "x",
          },
        },
      }),
    );
    try {
      const note = await eventually(
        "an IngressClassProblem Event",
        () =>
          kubectlOk([
            "get",
            "events",
            "-n",
            "default",
            "--field-selector",
            `involvedObject.kind=IngressClass,involvedObject.name=${broken},reason=IngressClassProblem`,
            "-o",
            "jsonpath={.items[*].message}",
          ]) || undefined,
        60_000,
      );
      expect(note).toContain("core/ConfigMap is not supported");
    } finally {
      kubectl(["delete", "ingressclass", broken, "--ignore-not-found"]);
    }
    rows.push({
      scenario: "a class's parameters reported",
      proved:
        "an IngressClass naming a ConfigMap gets a Warning Event IngressClassProblem saying why",
      checks: 1,
    });
  });

  it("moves the proxies with the class's parameters, leaving nothing behind", async () => {
    kubectlOk(
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "gateway.kengine.io/v1alpha1",
        kind: "KengineParameters",
        metadata: { name: "edge", namespace: team },
        spec: { proxy: { replicas: 1 } },
      }),
    );
    expect(owned(infra)).toContain(`deployment.apps/${proxies}`);
    kubectlOk([
      "patch",
      "ingressclass",
      className,
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { parameters: { namespace: team } } }),
    ]);
    const moved = await eventually(
      "the proxies in the new namespace, none left in the old",
      () =>
        owned(team).includes(`deployment.apps/${proxies}`) && owned(infra) === ""
          ? true
          : undefined,
      120_000,
    );
    expect(moved).toBe(true);
    rows.push({
      scenario: "the class's parameters moved",
      proved:
        "the proxies made in the new namespace, and the old namespace's Deployment, Services, Secrets and ConfigMap deleted",
      checks: 2,
    });
  });

  it("deleting the IngressClass removes its proxies", async () => {
    expect(owned(team)).toContain(`deployment.apps/${proxies}`);
    kubectlOk(["delete", "ingressclass", className]);
    const gone = await eventually(
      "the proxies' objects gone",
      () => (owned(team) === "" ? true : undefined),
      120_000,
    );
    expect(gone).toBe(true);
    rows.push({
      scenario: "the class deleted",
      proved:
        "Kubernetes' garbage collector removed the class's Deployment, Services, Secrets and ConfigMap",
      checks: 2,
    });
  });
});
