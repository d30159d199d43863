import { readFileSync } from "node:fs";
import { join } from "node:path";
import { GatewayIR } from "../ir";
import { PROXY_FLAVORS, capabilitiesOf } from "../flavor/proxy-flavor";
import { PERSISTENT_HTTP_NETWORK, PERSISTENT_TCP_NETWORK, toCaddyConfig } from "./config";

const ir = (flavor?: GatewayIR["flavor"]): GatewayIR => ({
  namespace: "ns",
  name: "gw",
  gatewayClassName: "kengine",
  ...(flavor && { flavor }),
  httpServers: [{ port: 80, protocol: "HTTP", listeners: [] }],
  l4Servers: [
    { port: 443, protocol: "TLS", routes: [] },
    { port: 9000, protocol: "TCP", routes: [] },
    { port: 5353, protocol: "UDP", routes: [] },
  ],
  certificates: [],
});

const listens = (config: ReturnType<typeof toCaddyConfig>): Record<string, unknown> => {
  const apps = config.apps as Record<string, { servers: Record<string, { listen: string[] }> }>;
  return Object.fromEntries(
    ["http", "layer4"].flatMap(app =>
      Object.entries(apps[app]?.servers ?? {}).map(([name, s]) => [name, s.listen]),
    ),
  );
};

describe("listen addresses and the proxy flavour", () => {
  it("uses our persistent networks on the Bundled flavour (the default), UDP stays udp", () => {
    expect(listens(toCaddyConfig(ir(), { bindHost: "127.0.0.1", portOffset: 10000 }))).toEqual({
      "http-80": ["kengine-http/127.0.0.1:10080"],
      "tls-443": ["kengine-tcp/127.0.0.1:10443"],
      "tcp-9000": ["kengine-tcp/127.0.0.1:19000"],
      "udp-5353": ["udp/127.0.0.1:15353"],
    });
    expect(toCaddyConfig(ir("Bundled"))).toEqual(toCaddyConfig(ir()));
  });

  it("uses stock addresses on flavours without our listener module", () => {
    for (const flavor of PROXY_FLAVORS.filter(f => !capabilitiesOf(f).persistentListeners))
      expect(listens(toCaddyConfig(ir(flavor)))).toEqual({
        "http-80": [":80"],
        "tls-443": [":443"],
        "tcp-9000": [":9000"],
        "udp-5353": ["udp/:5353"],
      });
  });

  it("names the networks proxy/listener registers", () => {
    const go = readFileSync(join(__dirname, "../../proxy/listener/listener.go"), "utf8");
    expect(go).toContain(`HTTPNetwork = "${PERSISTENT_HTTP_NETWORK}"`);
    expect(go).toContain(`TCPNetwork = "${PERSISTENT_TCP_NETWORK}"`);
  });
});
