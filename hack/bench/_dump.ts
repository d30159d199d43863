import { sealGatewayConfig } from "../../capabilities/reconcile/plan";
import { snapshotOf } from "../../capabilities/snapshot";
import { translate } from "../../capabilities/translate";
import { CONTROLLER_NAME } from "../../capabilities/ownership";
import { createAuthority, generateKeyPair } from "../../capabilities/proxies";
import { withProxyFlavor } from "../../tests/support/flavor";
import { snapshotObjects, httpRoute } from "./workload";
const opts = { routes: Number(process.argv[2] ?? 1), gateways: 1 };
let objs = snapshotObjects(opts).map(o =>
  o.kind === "HTTPRoute" && o.metadata.name === "r0" ? httpRoute(0, opts, true) : o,
);
if (process.argv[3]) objs = withProxyFlavor(objs, process.argv[3] as any);
const ca = createAuthority({
  commonName: "x",
  keys: generateKeyPair(),
  notBefore: new Date(),
  lifetimeDays: 3,
});
if (!ca.ok) throw new Error("ca");
const t = translate(snapshotOf(objs), { controllerName: CONTROLLER_NAME });
const spec = {
  listenAddress: "127.0.0.1:9443",
  adminAddress: "unix//tmp/a.sock",
  serverCertTag: "kengine-management",
  clientCaPem: ca.value.certificatePem,
  serverCertificate: { kind: "files", certificateFile: "/a", keyFile: "/b" },
  readinessAddress: "127.0.0.1:8081",
} as any;
const s = sealGatewayConfig(t.gateways[0], spec, { bindHost: "127.0.0.1", portOffset: 10000 });
if (!s.ok) throw new Error(JSON.stringify(s.error));
console.log(JSON.stringify(JSON.parse(s.value.bytes.toString()), null, 1));
