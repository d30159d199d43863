import fc from "fast-check";
import { CONTROLLER_NAME, isOurClass, isOurControllerName } from "./index";
import {
  GATEWAY_NAME_LABEL,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  OWNING_GATEWAY_LABEL,
  isManagedByUs,
  isOurProxyObject,
} from "./proxies";

describe("isOurClass / isOurControllerName", () => {
  it("is ours exactly when spec.controllerName is ours", () => {
    fc.assert(
      fc.property(fc.option(fc.string(), { nil: undefined }), name => {
        const gc = { spec: { controllerName: name } };
        expect(isOurClass(gc)).toBe(name === CONTROLLER_NAME);
        expect(isOurControllerName(name)).toBe(name === CONTROLLER_NAME);
      }),
    );
    expect(isOurClass({ spec: { controllerName: CONTROLLER_NAME } })).toBe(true);
    expect(isOurClass(undefined)).toBe(false);
    expect(isOurClass({})).toBe(false);
  });
  it("takes another controllerName to compare with (translate's option)", () => {
    expect(isOurClass({ spec: { controllerName: "example.com/x" } }, "example.com/x")).toBe(true);
    expect(isOurClass({ spec: { controllerName: CONTROLLER_NAME } }, "example.com/x")).toBe(false);
  });
});

describe("isOurProxyObject", () => {
  const o = (labels?: Record<string, string>) => ({ metadata: { labels } });
  it("is a managed proxy's object (managed by us, for a Gateway) or a bring-your-own Service's", () => {
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.boolean(),
        fc.boolean(),
        fc.constantFrom(MANAGED_BY, "helm"),
        (managed, forGateway, owning, manager) => {
          const labels: Record<string, string> = {
            ...(managed ? { [MANAGED_BY_LABEL]: manager } : {}),
            ...(forGateway ? { [GATEWAY_NAME_LABEL]: "gw" } : {}),
            ...(owning ? { [OWNING_GATEWAY_LABEL]: "gw" } : {}),
          };
          const mine = managed && manager === MANAGED_BY;
          expect(isManagedByUs(o(labels))).toBe(mine);
          expect(isOurProxyObject(o(labels))).toBe((mine && forGateway) || owning);
        },
      ),
    );
    expect(isOurProxyObject(o())).toBe(false);
  });
});
