import fc from "fast-check";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import {
  PLATFORM_FIELDS,
  PlatformField,
  allowOverridesShapeProblems,
  gatewayOverrideProblems,
} from "./overrides";
import { kengineParametersProblems } from "./parameters";

/** A value the CRD would store for each platform field. */
const SAMPLE: Record<PlatformField, unknown> = {
  image: "example.com/tenant/kengine:1",
  command: ["/bin/sh", "-c", "id"],
  nodeSelector: { "node-role.kubernetes.io/control-plane": "" },
  tolerations: [{ operator: "Exists" }],
  affinity: { nodeAffinity: {} },
};

const fields = fc.subarray([...PLATFORM_FIELDS]);

describe("gatewayOverrideProblems", () => {
  it("names exactly the platform fields a Gateway's parameters set and its class does not allow", () => {
    fc.assert(
      fc.property(fields, fields, fc.nat(10), (set, allowed, replicas) => {
        const gatewaySpec = {
          proxy: { replicas, flavor: "Caddy", ...Object.fromEntries(set.map(f => [f, SAMPLE[f]])) },
        };
        const paths = gatewayOverrideProblems(gatewaySpec, {
          allowGatewayOverrides: allowed,
        }).map(p => p.path);
        expect(paths).toEqual(set.filter(f => !allowed.includes(f)).map(f => `spec.proxy.${f}`));
      }),
    );
  });

  it("allows nothing when the class has no parameters or a malformed list", () => {
    for (const classSpec of [undefined, {}, { allowGatewayOverrides: "image" }])
      expect(gatewayOverrideProblems({ proxy: { image: "x" } }, classSpec)).toEqual([
        expect.objectContaining({ path: "spec.proxy.image", value: "x" }),
      ]);
  });

  it("refuses a Gateway's parameters that try to grant overrides themselves", () => {
    expect(
      gatewayOverrideProblems(
        { allowGatewayOverrides: ["image"] },
        { allowGatewayOverrides: ["image"] },
      ),
    ).toEqual([expect.objectContaining({ path: "spec.allowGatewayOverrides" })]);
  });

  it("leaves tenant-owned fields alone (replicas, flavor, resources, service, mode)", () => {
    expect(
      gatewayOverrideProblems(
        {
          proxy: { replicas: 3, kind: "DaemonSet", flavor: "Kengine", resources: {} },
        },
        undefined,
      ),
    ).toEqual([]);
  });
});

describe("allowGatewayOverrides shape", () => {
  const crd = parse(
    readFileSync(
      join(__dirname, "../../deploy/crds/gateway.kengine.io_kengineparameters.yaml"),
      "utf8",
    ),
  );
  const schema =
    crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.allowGatewayOverrides;

  it("accepts the CRD's enum and nothing else", () => {
    expect(schema.items.enum).toEqual([...PLATFORM_FIELDS]);
    expect(allowOverridesShapeProblems([...PLATFORM_FIELDS])).toEqual([]);
    expect(allowOverridesShapeProblems(["image", "replicas"])).toEqual([
      expect.objectContaining({ path: "spec.allowGatewayOverrides[1]", value: "replicas" }),
    ]);
    expect(allowOverridesShapeProblems("image")).toHaveLength(1);
  });

  it("is checked with the rest of the object", () => {
    expect(
      kengineParametersProblems({ spec: { allowGatewayOverrides: ["imagee"] } } as never).map(
        p => p.path,
      ),
    ).toEqual(["spec.allowGatewayOverrides[0]"]);
  });
});
