import { supportedVersionCondition } from "./supported-version";

describe("supportedVersionCondition", () => {
  it("is True for the v1.7 and v1.6 release lines, False naming the versions otherwise", () => {
    expect(supportedVersionCondition("v1.6.1", 3)).toMatchObject({
      status: "True",
      reason: "SupportedVersion",
      observedGeneration: 3,
    });
    expect(supportedVersionCondition("v1.6.0")?.status).toBe("True");
    expect(supportedVersionCondition("v1.7.0")?.status).toBe("True");
    expect(supportedVersionCondition("v1.7.3")?.status).toBe("True");
    expect(supportedVersionCondition("v1.5.1")?.status).toBe("False");
    expect(supportedVersionCondition("v1.8.0")?.status).toBe("False");
    const old = supportedVersionCondition("v1.2.0");
    expect(old).toMatchObject({ status: "False", reason: "UnsupportedVersion" });
    expect(old?.message).toContain("v1.2.0");
    expect(old?.message).toContain("v1.6.1");
    expect(old?.message).toContain("v1.7.0");
    expect(supportedVersionCondition("")?.status).toBe("False");
    expect(supportedVersionCondition(undefined)).toBeUndefined();
  });
});

describe("supportedVersionCondition with kinds not served", () => {
  it("names every kind whose CRD is not installed, sorted, and keeps the version's status", () => {
    const c = supportedVersionCondition("v1.6.1", 1, ["UDPRoute", "TCPRoute"]);
    expect(c?.status).toBe("True");
    expect(c?.message).toContain("TCPRoute, UDPRoute");
    expect(supportedVersionCondition("v1.6.1", 1, [])?.message).not.toContain("not installed");
  });
});
