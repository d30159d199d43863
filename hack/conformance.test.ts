import { defaultVersion, parseArgs, suiteVersions } from "./conformance";
import { ingressArgs } from "./conformance-ingress";

describe("npm run conformance flags", () => {
  it("runs suite v1.6.1 unless --version names another release it knows", () => {
    expect(defaultVersion).toBe("v1.6.1");
    expect(parseArgs([]).version).toBe(defaultVersion);
    for (const v of Object.keys(suiteVersions))
      expect(parseArgs([`--version=${v}`]).version).toBe(v);
    expect(() => parseArgs(["--version=v1.5.0"])).toThrow(/unknown suite version v1\.5\.0/);
    expect(() => parseArgs(["--version"])).toThrow(/needs a value/);
  });
  it("knows the five Gateway profiles", () => {
    const all = "GATEWAY-HTTP,GATEWAY-GRPC,GATEWAY-TLS,GATEWAY-TCP,GATEWAY-UDP";
    expect(parseArgs([`--profiles=${all}`]).profiles).toBe(all);
    expect(() => parseArgs(["--profiles=GATEWAY-SCTP"])).toThrow(/unknown profile/);
  });
  it("builds v1.7.0 in its own module, installing v1.6.1's CRDs only for suite v1.6.1", () => {
    expect(suiteVersions["v1.7.0"].dir).toMatch(/hack\/peers\/conformance$/);
    expect(suiteVersions["v1.7.0"].env).toEqual({ GOTOOLCHAIN: "auto" });
    expect("crds" in suiteVersions["v1.7.0"]).toBe(false);
    expect(suiteVersions["v1.6.1"].crds).toBe("v1.6.1");
  });
  it("runs pepr dev unless --deployed, which keeps every other flag", () => {
    expect(parseArgs([]).deployed).toBe(false);
    const o = parseArgs([
      "--deployed",
      "--strict",
      "--version=v1.7.0",
      "--profiles=GATEWAY-HTTP,GATEWAY-TCP",
      "--run-test=HTTPRouteSimpleSameNamespace",
    ]);
    expect(o).toMatchObject({
      deployed: true,
      strict: true,
      version: "v1.7.0",
      profiles: "GATEWAY-HTTP,GATEWAY-TCP",
      runTest: "HTTPRouteSimpleSameNamespace",
    });
    expect(() => parseArgs(["--deployed=yes"])).toThrow(/--deployed takes no value/);
  });
  it("runs the Ingress suite beside it only with --ingress, passing --strict on", () => {
    expect(parseArgs([]).ingress).toBe(false);
    expect(parseArgs(["--ingress", "--deployed"])).toMatchObject({ ingress: true, deployed: true });
    expect(() => parseArgs(["--ingress=yes"])).toThrow(/--ingress takes no value/);
    expect(ingressArgs(true).slice(1)).toEqual(["--strict"]);
    expect(ingressArgs(false).slice(1)).toEqual([]);
    expect(ingressArgs(false)[0]).toMatch(/hack\/ingress-conformance\/run\.ts$/);
  });
});
