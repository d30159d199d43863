import { gatewayProblems } from "./gateway";

describe("gatewayProblems", () => {
  it("refuses reserved ports and TLS options, each with its listener's path", () => {
    const problems = gatewayProblems({
      spec: {
        listeners: [
          { name: "ok", port: 80 },
          { name: "admin", port: 2019 },
          {
            name: "mgmt",
            port: 19443,
            tls: { options: { "example.com/cipher": "x", other: "y" } },
          },
          { name: "ready", port: 19080 },
        ],
      },
    });
    expect(problems.map(p => p.path)).toEqual([
      "spec.listeners[1].port",
      "spec.listeners[2].port",
      'spec.listeners[2].tls.options["example.com/cipher"]',
      'spec.listeners[2].tls.options["other"]',
      "spec.listeners[3].port",
    ]);
    expect(problems[0].message).toBe(
      "is reserved by the Kengine proxy pod (admin, management and readiness use 2019, 19443, 19080): choose another port",
    );
  });
  it("leaves conflicts, missing certificates and unknown protocols to status", () => {
    expect(
      gatewayProblems({
        spec: {
          listeners: [
            {
              name: "a",
              port: 443,
              protocol: "HTTPS",
              tls: { certificateRefs: [{ name: "missing" }] },
            },
            { name: "b", port: 443, protocol: "HTTP" },
            { name: "c", port: 9, protocol: "example.com/custom" },
          ] as never,
        },
      }),
    ).toEqual([]);
  });
});
