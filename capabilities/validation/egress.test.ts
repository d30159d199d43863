import { readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { parse } from "yaml";
import {
  DEFAULT_EGRESS,
  LOOPBACK_NAMES,
  MAX_DENIED_CIDRS,
  cidrContains,
  egressParametersProblems,
  gatewayEgressProblems,
  hostnameEgressProblem,
  parseCidr,
  readEgress,
} from "./egress";
import { kengineParametersProblems } from "./parameters";
import { gatewayOverrideProblems } from "./overrides";

describe("hostnameEgressProblem", () => {
  it.each([
    ...LOOPBACK_NAMES,
    "LOCALHOST",
    "localhost.",
    "LocalHost..",
    "api.localhost",
    "a.b.LOCALHOST.",
    "Localhost.LocalDomain.",
    "IP6-LOCALHOST",
    "ip6-loopback.",
  ])("refuses the loopback name %s", h => {
    expect(hostnameEgressProblem(h)).toMatch(/loopback name/);
  });

  it.each([
    "2130706433",
    "0x7f000001",
    "0X7F000001",
    "127.1",
    "127.0.1",
    "127.0.0.1",
    "127.0.0.1.",
    "0177.0.0.1",
    "0x7f.1",
    "0",
    "0x",
    "169.254.169.254",
    "foo.123",
  ])("refuses %s, which a C resolver reads as an address", h => {
    expect(hostnameEgressProblem(h)).toMatch(/read as an IP address/);
  });

  it.each(["[::1]", "::1", "a:2019", "a b", "a..b", "-a", "", "."])(
    "refuses %j, no DNS name",
    h => {
      expect(hostnameEgressProblem(h)).toBeDefined();
    },
  );

  it.each([
    "example.com",
    "Example.COM.",
    "localhost.example.com",
    "mylocalhost",
    "localhost-1",
    "ip6-localhost.example",
    "1.example.com",
    "0x7f.example",
    "api.0xcafe.io",
  ])("allows the DNS name %s", h => {
    expect(hostnameEgressProblem(h)).toBeUndefined();
  });
});

describe("CIDRs", () => {
  it.each([
    ["10.0.0.0/8", "10.255.1.2", true],
    ["10.0.0.0/8", "11.0.0.1", false],
    ["0.0.0.0/0", "203.0.113.9", true],
    ["192.168.1.7/32", "192.168.1.7", true],
    ["fd00::/8", "fd12::1", true],
    ["fd00::/8", "fe80::1", false],
    ["::ffff:0:0/96", "::ffff:10.1.2.3", true],
    ["10.0.0.0/8", "::ffff:10.1.2.3", false],
    ["::/0", "10.0.0.1", false],
  ])("%s contains %s: %s", (cidr, ip, inside) => {
    const c = parseCidr(cidr);
    expect(c.ok).toBe(true);
    if (c.ok) expect(cidrContains(c.value, ip)).toBe(inside);
  });

  it.each([
    ["10.0.0.1/8", /bits set beyond/],
    ["10.0.0.0/33", /at most 32/],
    ["fd00::/129", /at most 128/],
    ["10.0.0.0", /not a CIDR/],
    ["10.0.0.0/08", /not a CIDR/],
    ["example.com/8", /not a CIDR/],
    ["fe80::%eth0/64", /not a CIDR/],
    [8, /must be a string/],
  ])("refuses %j", (cidr, why) => {
    const r = parseCidr(cidr);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.why).toMatch(why);
  });

  it("an address is inside its own /32 or /128 and nothing is inside another family's range", () => {
    fc.assert(
      fc.property(fc.oneof(fc.ipV4(), fc.ipV6()), ip => {
        const full = ip.includes(":") ? 128 : 32;
        const host = parseCidr(`${ip}/${full}`);
        expect(host.ok).toBe(true);
        if (host.ok) expect(cidrContains(host.value, ip)).toBe(true);
        const all = parseCidr(ip.includes(":") ? "0.0.0.0/0" : "::/0");
        if (all.ok) expect(cidrContains(all.value, ip)).toBe(false);
      }),
    );
  });
});

describe("spec.egress", () => {
  const crd = parse(
    readFileSync(
      join(__dirname, "../../deploy/crds/gateway.kengine.io_kengineparameters.yaml"),
      "utf8",
    ),
  );
  const schema = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.egress;

  it("the CRD declares the same enum, default and bound", () => {
    expect(schema.properties.externalHostnames.enum).toEqual(["Allowed", "Denied"]);
    expect(schema.properties.externalHostnames.default).toBe(DEFAULT_EGRESS.externalHostnames);
    expect(schema.properties.deniedCIDRs.maxItems).toBe(MAX_DENIED_CIDRS);
  });

  it("accepts what it documents", () => {
    expect(
      egressParametersProblems({
        externalHostnames: "Allowed",
        deniedCIDRs: ["10.0.0.0/8", "fd00::/8"],
      }),
    ).toEqual([]);
    expect(egressParametersProblems(undefined)).toEqual([]);
    expect(egressParametersProblems({})).toEqual([]);
  });

  it("names each bad field", () => {
    expect(
      egressParametersProblems({
        externalHostnames: "yes",
        deniedCIDRs: ["10.0.0.0/8", "10.0.0.1/8", "x"],
        extra: 1,
      }).map(p => p.path),
    ).toEqual([
      "spec.egress.externalHostnames",
      "spec.egress.deniedCIDRs[1]",
      "spec.egress.deniedCIDRs[2]",
      'spec.egress["extra"]',
    ]);
    expect(
      egressParametersProblems({
        deniedCIDRs: Array.from({ length: MAX_DENIED_CIDRS + 1 }, () => "10.0.0.0/8"),
      }),
    ).toEqual([expect.objectContaining({ path: "spec.egress.deniedCIDRs" })]);
    expect(egressParametersProblems("Allowed")).toHaveLength(1);
  });

  it("is checked with the rest of a KengineParameters object", () => {
    expect(
      kengineParametersProblems({ spec: { egress: { deniedCIDRs: ["10.0.0.1/8"] } } }).map(
        p => p.path,
      ),
    ).toEqual(["spec.egress.deniedCIDRs[0]"]);
  });

  it("is class-level only: a Gateway's own parameters that set it are refused", () => {
    const own = { egress: { externalHostnames: "Allowed" } };
    expect(gatewayEgressProblems(own)).toEqual([
      expect.objectContaining({
        path: "spec.egress",
        message: expect.stringMatching(/only in the parameters a GatewayClass references/),
      }),
    ]);
    // Whatever the class says: there is no override for it.
    expect(
      gatewayOverrideProblems(own, {
        allowGatewayOverrides: ["image"],
        egress: { externalHostnames: "Allowed" },
      } as never).map(p => p.path),
    ).toEqual(["spec.egress"]);
    expect(gatewayEgressProblems({})).toEqual([]);
  });

  it("reads the defaults when unset or malformed", () => {
    expect(readEgress(undefined)).toEqual(DEFAULT_EGRESS);
    expect(readEgress({ egress: "Allowed" })).toEqual(DEFAULT_EGRESS);
    expect(readEgress({ egress: { externalHostnames: "allowed" } })).toEqual(DEFAULT_EGRESS);
    expect(
      readEgress({ egress: { externalHostnames: "Allowed", deniedCIDRs: ["10.0.0.0/8"] } }),
    ).toEqual({ externalHostnames: "Allowed", deniedCIDRs: ["10.0.0.0/8"] });
  });
});
