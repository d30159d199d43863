import { parseArgs } from "./args";

describe("parseArgs", () => {
  it("reads flags in both forms and defaults the rest", () => {
    const a = parseArgs(["--kubeconfig", "k", "--peers=/p", "--state", "/s"]);
    expect(a).toMatchObject({
      kubeconfig: "k",
      controllersKubeconfig: "k",
      peers: "/p",
      state: "/s",
      nodeName: "kengine-local",
      port: 10250,
    });
    expect(() => parseArgs(["--kubeconfig", "k", "--peers", "p"])).toThrow(/--state is required/);
    expect(() => parseArgs(["--bogus", "1"])).toThrow(/unknown flag/);
  });
});
