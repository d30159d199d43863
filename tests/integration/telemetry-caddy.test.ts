/**
 * XTelemetryPolicy tracing on a real proxy: the golden `telemetry` (tests/golden) translated,
 * Gateway `gw` (its policy: span name `gateway`, attributes from a literal with braces, the
 * X-User-Id header and http.request.method) loaded into a Bundled Caddy (2.11.9) started with
 * OTEL_TRACES_EXPORTER=otlp and OTEL_EXPORTER_OTLP_ENDPOINT at an OTLP/HTTP receiver on
 * loopback (tests/support/otlp.ts, protobuf: the Go exporter has no http/json). A request
 * through the proxy to a backend on loopback yields a span with the policy's name and
 * attributes. The Kengine flavour (Caddy 2.8: `tracing` without span_attributes, exporting
 * over OTLP/gRPC only): the same file gives `gw` no tracing there (the policy is Invalid for
 * it); the same policy without attributes traces, to a gRPC receiver.
 * Loopback only.
 */
import { Server, createServer } from "node:http";
import { AddressInfo } from "node:net";
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { request } from "undici";
import { ProxyFlavor } from "../../capabilities/flavor/proxy-flavor";
import { snapshotOf } from "../../capabilities/snapshot";
import { translate } from "../../capabilities/translate";
import { parseSnapshotYAML } from "../../hack/translate";
import { Caddy, loadGateway, startCaddy } from "../support/caddy";
import { withProxyFlavor } from "../support/flavor";
import { withLoopbackEndpoints } from "../support/loopback";
import { OtlpReceiver, startOtlpReceiver } from "../support/otlp";
import { listenerPortOffset } from "../support/ports";

const PORT_OFFSET = listenerPortOffset();
const GOLDEN = join(__dirname, "..", "golden", "telemetry.in.yaml");

let backend: Server;
let backendPort = 0;

beforeAll(async () => {
  backend = createServer((_req, res) => res.writeHead(200).end("ok"));
  await new Promise<void>(r => backend.listen(0, "127.0.0.1", () => r()));
  backendPort = (backend.address() as AddressInfo).port;
});

afterAll(async () => {
  backend.closeAllConnections();
  await new Promise(r => backend.close(r));
});

/** The IR of Gateway default/gw of the golden as `flavor` proxies run it. */
async function gatewayIR(flavor: ProxyFlavor, edit: (yaml: string) => string = y => y) {
  const objects = await withLoopbackEndpoints(
    parseSnapshotYAML(edit(readFileSync(GOLDEN, "utf8"))),
    async () => backendPort,
  );
  const result = translate(snapshotOf(withProxyFlavor(objects, flavor)));
  const ir = result.gateways.find(g => g.namespace === "default" && g.name === "gw");
  if (!ir) throw new Error("golden telemetry: no Gateway default/gw");
  return ir;
}

const get = async (path: string, headers: Record<string, string> = {}) => {
  const res = await request(`http://127.0.0.1:${80 + PORT_OFFSET}${path}`, { headers });
  await res.body.text();
  return res.statusCode;
};

describe.each<[ProxyFlavor, "caddy" | "caddy-2.8"]>([
  ["Bundled", "caddy"],
  ["Kengine", "caddy-2.8"],
])("XTelemetryPolicy tracing (%s flavour)", (flavor, peer) => {
  let caddy: Caddy | undefined;
  let receiver: OtlpReceiver;
  beforeAll(async () => {
    // Caddy 2.8 has no autoexport: its exporter is otlptracegrpc.
    receiver = await startOtlpReceiver(flavor === "Kengine" ? "grpc" : "http/protobuf");
    caddy = await startCaddy({
      name: `telemetry-${flavor.toLowerCase()}`,
      peer,
      env: {
        OTEL_TRACES_EXPORTER: "otlp",
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_BSP_SCHEDULE_DELAY: "50",
        OTEL_SERVICE_NAME: `kg-${flavor.toLowerCase()}`,
      },
    });
  }, 120_000);
  afterAll(async () => {
    await caddy?.stop();
    await receiver.close();
  });

  if (flavor === "Bundled") {
    test("a request through the Gateway exports a span with the policy's name and attributes", async () => {
      const ir = await gatewayIR(flavor);
      expect(ir.tracing?.attributes.length).toBe(3);
      await loadGateway(caddy!, ir);
      const user = `alice-${Date.now()}`;
      expect(await get("/traced", { "x-user-id": user })).toBe(200);
      const span = await receiver.span(s => s.attributes["user.id"] === user);
      expect(span.resource["service.name"]).toBe("kg-bundled");
      expect(span.name).toBe("gateway");
      expect(span.attributes).toMatchObject({
        "deployment.environment": "test {not a placeholder}",
        "user.id": user,
        method: "GET",
      });
    });
  } else {
    test("span attributes are not rendered; a policy without them traces", async () => {
      expect((await gatewayIR(flavor)).tracing).toBeUndefined();
      // The same policy without attributes: Caddy 2.8 runs its `tracing` handler.
      const ir = await gatewayIR(flavor, y => y.replace(/\n {4}attributes:\n( {4}- .*\n)+/, "\n"));
      expect(ir.tracing).toEqual({ spanName: "gateway", attributes: [] });
      await loadGateway(caddy!, ir);
      expect(await get("/traced")).toBe(200);
      const span = await receiver.span(
        s => s.resource["service.name"] === "kg-kengine" && s.name === "gateway",
      );
      expect(span.name).toBe("gateway");
    });
  }
});
