import { snapshotOf } from "../snapshot";
import { DEFAULT_PROXY_SETTINGS, gatewayParametersProblem, resolveSettings } from "./index";

const params = (namespace: string, name: string, spec: object) => ({
  apiVersion: "gateway.kengine.io/v1alpha1",
  kind: "KengineParameters",
  metadata: { namespace, name },
  spec,
});
const ref = (name: string, namespace?: string) => ({
  group: "gateway.kengine.io",
  kind: "KengineParameters",
  name,
  namespace,
});

describe("resolveSettings", () => {
  const snapshot = snapshotOf([
    params("infra", "class-defaults", {
      proxy: { replicas: 3, image: "example/kengine:1" },
      service: { type: "NodePort", annotations: { a: "1" } },
    }),
    params("apps", "mine", {
      proxy: { replicas: 5, kind: "DaemonSet" },
      service: { annotations: { b: "2" } },
    }),
  ] as never);

  it("uses the defaults without references", () => {
    expect(resolveSettings(snapshot, { spec: {} }, { metadata: { namespace: "apps" } })).toEqual({
      settings: DEFAULT_PROXY_SETTINGS,
      problems: [],
    });
  });

  it("layers class parameters, then the Gateway's, field by field", () => {
    const r = resolveSettings(
      snapshot,
      { spec: { parametersRef: ref("class-defaults", "infra") } },
      { metadata: { namespace: "apps" }, spec: { infrastructure: { parametersRef: ref("mine") } } },
    );
    expect(r.problems).toEqual([]);
    expect(r.settings).toMatchObject({
      kind: "DaemonSet",
      replicas: 5,
      image: "example/kengine:1",
      command: ["caddy"],
      serviceType: "NodePort",
      service: { annotations: { b: "2" } },
    });
  });

  it("reports references that do not resolve and keeps going with what resolves", () => {
    const r = resolveSettings(
      snapshot,
      { spec: { parametersRef: { group: "", kind: "ConfigMap", name: "x", namespace: "infra" } } },
      {
        metadata: { namespace: "apps" },
        spec: { infrastructure: { parametersRef: ref("missing") } },
      },
    );
    expect(r.settings).toEqual(DEFAULT_PROXY_SETTINGS);
    expect(r.problems).toEqual([
      "GatewayClass parametersRef: core/ConfigMap is not supported (use gateway.kengine.io/KengineParameters)",
      "Gateway infrastructure.parametersRef: KengineParameters apps/missing not found",
    ]);
  });

  it("reports parameters that admission would refuse (validation/parameters.ts) and does not use them", () => {
    const bad = snapshotOf([
      params("apps", "bad", { proxy: { replicas: 2, resources: { requests: { cpu: "lots" } } } }),
    ] as never);
    const r = resolveSettings(
      bad,
      { spec: { parametersRef: ref("bad", "apps") } },
      {
        metadata: { namespace: "apps" },
      },
    );
    expect(r.settings).toEqual(DEFAULT_PROXY_SETTINGS);
    expect(r.problems).toEqual([
      'GatewayClass parametersRef: KengineParameters apps/bad is invalid: spec.proxy.resources.requests["cpu"]: is not a quantity: a non-negative number with an optional suffix (e.g. 100m, 64Mi, 1) (got "lots")',
    ]);
  });
});

describe("resolveSettings: platform-owned fields", () => {
  const classParams = params("infra", "platform", {
    proxy: { image: "example.com/kengine:1", tolerations: [{ key: "edge", operator: "Exists" }] },
  });
  const gateway = (name: string) => ({
    metadata: { namespace: "apps" },
    spec: { infrastructure: { parametersRef: ref(name) } },
  });

  it("does not use a Gateway's parameters that choose the image or placement, and says which field", () => {
    const snapshot = snapshotOf([
      classParams,
      params("apps", "mine", {
        proxy: { replicas: 4, image: "evil/kengine:1", nodeSelector: { a: "b" } },
      }),
    ] as never);
    const r = resolveSettings(
      snapshot,
      { spec: { parametersRef: ref("platform", "infra") } },
      gateway("mine"),
    );
    expect(r.settings).toMatchObject({ image: "example.com/kengine:1", replicas: 2 });
    expect(r.settings.nodeSelector).toBeUndefined();
    expect(r.problems).toHaveLength(1);
    expect(r.problems[0]).toMatch(
      /^Gateway infrastructure.parametersRef: KengineParameters apps\/mine .*spec\.proxy\.image: .*spec\.proxy\.nodeSelector: /,
    );
    expect(
      gatewayParametersProblem(
        snapshot,
        { spec: { parametersRef: ref("platform", "infra") } },
        gateway("mine"),
      ),
    ).toMatch(/^spec.infrastructure.parametersRef: .*spec\.proxy\.image/);
  });

  it("uses them when the class's parameters allow the field", () => {
    const snapshot = snapshotOf([
      params("infra", "platform", { allowGatewayOverrides: ["image"], proxy: { replicas: 2 } }),
      params("apps", "mine", { proxy: { image: "example.com/team/kengine:2" } }),
    ] as never);
    const r = resolveSettings(
      snapshot,
      { spec: { parametersRef: ref("platform", "infra") } },
      gateway("mine"),
    );
    expect(r.problems).toEqual([]);
    expect(r.settings.image).toBe("example.com/team/kengine:2");
  });

  it("allows nothing when the class's parameters do not resolve", () => {
    const snapshot = snapshotOf([params("apps", "mine", { proxy: { command: ["sh"] } })] as never);
    const r = resolveSettings(
      snapshot,
      { spec: { parametersRef: ref("gone", "infra") } },
      gateway("mine"),
    );
    expect(r.settings.command).toEqual(DEFAULT_PROXY_SETTINGS.command);
    expect(r.problems).toHaveLength(2);
  });
});

describe("resolveSettings: bring your own proxies", () => {
  it("takes mode and the external Secrets field by field (class, then Gateway)", () => {
    const snapshot = snapshotOf([
      params("infra", "byo", {
        mode: "External",
        external: { clientCertificateSecretName: "admin-client" },
      }),
      params("apps", "ca", { external: { caSecretName: "admin-ca" } }),
    ] as never);
    const r = resolveSettings(
      snapshot,
      { spec: { parametersRef: ref("byo", "infra") } },
      { metadata: { namespace: "apps" }, spec: { infrastructure: { parametersRef: ref("ca") } } },
    );
    expect(r.settings.mode).toBe("External");
    expect(r.settings.external).toEqual({
      clientCertificateSecretName: "admin-client",
      caSecretName: "admin-ca",
    });
    expect(resolveSettings(snapshot, undefined, { metadata: {} }).settings.mode).toBe("Managed");
  });
});
