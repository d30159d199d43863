import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { PROXY_FLAVORS } from "../flavor/proxy-flavor";
import { REPLICAS, kengineParametersProblems, quantityValue } from "./parameters";

const check = (spec: object) => kengineParametersProblems({ spec } as never);

describe("kengineParametersProblems", () => {
  it("accepts the README's example and an empty spec", () => {
    expect(
      check({
        proxy: {
          kind: "Deployment",
          replicas: 3,
          image: "ghcr.io/kengine-gateway/kengine:0.1.0",
          command: ["caddy"],
          resources: { requests: { cpu: "100m", memory: "64Mi" }, limits: { memory: "1Gi" } },
          nodeSelector: { "kubernetes.io/os": "linux", zone: "" },
          tolerations: [
            { key: "dedicated", operator: "Equal", value: "edge", effect: "NoSchedule" },
            { operator: "Exists" },
            { key: "node.kubernetes.io/unreachable", effect: "NoExecute", tolerationSeconds: 30 },
          ],
          affinity: { nodeAffinity: {} },
        },
        service: {
          type: "LoadBalancer",
          annotations: { "Example.COM/Team": "edge", note: "any text: { }" },
          loadBalancerClass: "example.com/internal",
          externalTrafficPolicy: "Local",
        },
      }),
    ).toEqual([]);
    expect(check({})).toEqual([]);
    expect(kengineParametersProblems({})).toEqual([]);
  });

  it("accepts image references with registry ports, digests and localhost", () => {
    for (const image of [
      "caddy",
      "library/caddy:2.11",
      "localhost:5000/kengine",
      "registry.example.com:443/a/b_c/d-e:v1.2.3-rc.1",
      `ghcr.io/x/kengine@sha256:${"a".repeat(64)}`,
      `ghcr.io/x/kengine:1@sha256:${"0".repeat(64)}`,
    ])
      expect({ image, problems: check({ proxy: { image } }) }).toEqual({ image, problems: [] });
  });

  it("refuses a replica count out of range, with the exact message", () => {
    expect(check({ proxy: { replicas: REPLICAS.max + 1 } })).toEqual([
      {
        path: "spec.proxy.replicas",
        value: "1001",
        message: "must be a whole number from 0 to 1000",
      },
    ]);
    expect(check({ proxy: { replicas: -1 } })).toHaveLength(1);
    expect(check({ proxy: { replicas: 1.5 } })).toHaveLength(1);
  });

  it("refuses image references no runtime can pull", () => {
    for (const image of [
      "",
      "Caddy:2",
      "caddy 2",
      "caddy:",
      "ghcr.io//caddy",
      "a@sha256:xyz",
      "-x",
    ])
      expect({ image, paths: check({ proxy: { image } }).map(p => p.path) }).toEqual({
        image,
        paths: ["spec.proxy.image"],
      });
    expect(check({ proxy: { image: "caddy 2" } })[0].message).toBe(
      "is not a container image reference: [registry/]name[:tag][@sha256:digest], name in lower case, no spaces",
    );
  });

  it("refuses bad resources: unknown fields, non-quantities, requests above limits", () => {
    expect(
      check({
        proxy: {
          resources: {
            request: { cpu: "1" },
            requests: { cpu: "2", memory: "64 Mi", "bad key!": "1" },
            limits: { cpu: "1500m" },
          },
        },
      }),
    ).toEqual([
      {
        path: "spec.proxy.resources.request",
        value: "request",
        message: "is not a field of container resources (accepted: requests, limits, claims)",
      },
      {
        path: 'spec.proxy.resources.requests["memory"]',
        value: "64 Mi",
        message:
          "is not a quantity: a non-negative number with an optional suffix (e.g. 100m, 64Mi, 1)",
      },
      {
        path: 'spec.proxy.resources.requests["bad key!"]',
        value: "bad key!",
        message:
          "is not a resource name: must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, with an optional DNS-subdomain prefix",
      },
      {
        path: 'spec.proxy.resources.requests["cpu"]',
        value: "2",
        message: "must not exceed its limit (1500m)",
      },
    ]);
  });

  it("refuses bad tolerations, each problem with its index", () => {
    expect(
      check({
        proxy: {
          tolerations: [
            { key: "a", operator: "In" },
            { operator: "Equal", value: "x" },
            { key: "b", operator: "Exists", value: "x" },
            { key: "c", effect: "NoSchedule", tolerationSeconds: 5 },
            { key: "d", effect: "Sometimes" },
            "x",
          ],
        },
      }).map(p => `${p.path}: ${p.message}`),
    ).toEqual([
      "spec.proxy.tolerations[0].operator: accepted: Exists, Equal",
      "spec.proxy.tolerations[1].operator: must be Exists when key is empty (a toleration of every taint)",
      "spec.proxy.tolerations[2].value: must be empty when operator is Exists",
      "spec.proxy.tolerations[3].tolerationSeconds: is only allowed with effect NoExecute",
      "spec.proxy.tolerations[4].effect: accepted: NoSchedule, PreferNoSchedule, NoExecute (or empty: every effect)",
      "spec.proxy.tolerations[5]: must be an object",
    ]);
  });

  it("refuses bad label keys and values, annotation keys, affinity kinds and service fields", () => {
    expect(
      check({
        proxy: {
          nodeSelector: { "Example.com/x": "a", ok: "has space", n: 3 },
          affinity: { nodeAfinity: {}, podAffinity: [] },
          command: ["caddy", ""],
        },
        service: {
          type: "ExternalName",
          annotations: { "-bad": "x" },
          loadBalancerClass: "no spaces please",
          externalTrafficPolicy: "Nearest",
        },
      }).map(p => p.path),
    ).toEqual([
      "spec.proxy.command[1]",
      'spec.proxy.nodeSelector["Example.com/x"]',
      'spec.proxy.nodeSelector["ok"]',
      'spec.proxy.nodeSelector["n"]',
      "spec.proxy.affinity.nodeAfinity",
      "spec.proxy.affinity.podAffinity",
      "spec.service.type",
      'spec.service.annotations["-bad"]',
      "spec.service.externalTrafficPolicy",
      "spec.service.loadBalancerClass",
    ]);
  });

  it("reads quantities as the API server does", () => {
    expect(quantityValue("100m")).toBeCloseTo(0.1);
    expect(quantityValue("64Mi")).toBe(64 * 2 ** 20);
    expect(quantityValue("1e3")).toBe(1000);
    expect(quantityValue(".5")).toBe(0.5);
    expect(quantityValue(2)).toBe(2);
    for (const bad of ["", "-1", "1.5.5", "1mi", "1 Gi", "Mi", -1, {}, null])
      expect(quantityValue(bad)).toBeUndefined();
  });

  it("keeps the replica range equal to the CRD's", () => {
    const crd = parse(
      readFileSync(
        join(__dirname, "../../deploy/crds/gateway.kengine.io_kengineparameters.yaml"),
        "utf8",
      ),
    );
    const replicas =
      crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.proxy.properties
        .replicas;
    expect({ min: replicas.minimum, max: replicas.maximum }).toEqual(REPLICAS);
  });

  it("accepts the proxy flavours and refuses others, like the CRD's enum", () => {
    for (const flavor of PROXY_FLAVORS) expect(check({ proxy: { flavor } })).toEqual([]);
    expect(check({ proxy: { flavor: "caddy" } })).toEqual([
      {
        path: "spec.proxy.flavor",
        value: "caddy",
        message: "accepted: Bundled, Caddy, Kengine",
      },
    ]);
    const crd = parse(
      readFileSync(
        join(__dirname, "../../deploy/crds/gateway.kengine.io_kengineparameters.yaml"),
        "utf8",
      ),
    );
    expect(
      crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.proxy.properties.flavor
        .enum,
    ).toEqual(PROXY_FLAVORS);
  });
});

describe("kengineParametersProblems: spec.addresses", () => {
  it("accepts IPs and DNS names, each once", () => {
    expect(
      check({
        addresses: [
          { value: "127.20.250.1" },
          { type: "IPAddress", value: "fd00::1" },
          { type: "Hostname", value: "gw.example.com" },
        ],
      }),
    ).toEqual([]);
  });

  it("names the entry that is not an address of its type, or listed twice", () => {
    expect(
      check({
        addresses: [
          { value: "300.1.1.1" },
          { type: "Hostname", value: "Not A Name" },
          { type: "NamedAddress", value: "x" },
          { value: "10.0.0.1" },
          { value: "10.0.0.1" },
        ],
      }),
    ).toEqual([
      { path: "spec.addresses[0].value", value: "300.1.1.1", message: "is not an IP address" },
      {
        path: "spec.addresses[1].value",
        value: "Not A Name",
        message: "is not a lower-case DNS name",
      },
      {
        path: "spec.addresses[2].type",
        value: "NamedAddress",
        message: "accepted: IPAddress, Hostname",
      },
      { path: "spec.addresses[4].value", value: "10.0.0.1", message: "is listed twice" },
    ]);
    expect(check({ addresses: "10.0.0.1" })).toHaveLength(1);
  });
});
