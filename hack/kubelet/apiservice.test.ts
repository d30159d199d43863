import { apiServiceEnv, upstreamOf } from "./apiservice";

describe("apiServiceEnv", () => {
  it("is what a kubelet sets for the kubernetes Service (in-cluster clients read HOST and PORT)", () => {
    expect(apiServiceEnv({ host: "10.96.0.1", port: 443 })).toEqual({
      KUBERNETES_SERVICE_HOST: "10.96.0.1",
      KUBERNETES_SERVICE_PORT: "443",
      KUBERNETES_SERVICE_PORT_HTTPS: "443",
      KUBERNETES_PORT: "tcp://10.96.0.1:443",
      KUBERNETES_PORT_443_TCP: "tcp://10.96.0.1:443",
      KUBERNETES_PORT_443_TCP_PROTO: "tcp",
      KUBERNETES_PORT_443_TCP_PORT: "443",
      KUBERNETES_PORT_443_TCP_ADDR: "10.96.0.1",
    });
  });
});

describe("upstreamOf", () => {
  it.each([
    ["https://127.0.0.1:6443", { host: "127.0.0.1", port: 6443 }],
    ["https://127.0.0.1", { host: "127.0.0.1", port: 443 }],
    ["https://[::1]:7443", { host: "::1", port: 7443 }],
  ])("%s", (server, want) => expect(upstreamOf(server)).toEqual(want));
});
