import { parseLogPath } from "./logserver";

describe("parseLogPath", () => {
  it("splits /containerLogs paths", () => {
    expect(parseLogPath("/containerLogs/ns/pod-1/echo")).toEqual({
      namespace: "ns",
      pod: "pod-1",
      container: "echo",
    });
    expect(parseLogPath("/containerLogs/ns/pod")).toBeUndefined();
    expect(parseLogPath("/exec/ns/pod/c")).toBeUndefined();
  });
});
