/**
 * BackendTLSPolicy through real Caddy: the golden `backend-tls` is translated with its
 * EndpointSlices pointed at node HTTPS servers on 127.0.0.1 serving the certificate from its
 * Secret `backend-serving` (signed by the CA in ConfigMap `backend-ca`). We assert that the
 * proxy speaks TLS with the policy's hostname as SNI, verifies against the ConfigMap's CA (not
 * the system store, not skip-verify), and answers 500 where the policy cannot be applied.
 */
import { readFileSync } from "node:fs";
import { createServer as createHTTPServer } from "node:http";
import { Server as HTTPSServer, createServer as createHTTPSServer } from "node:https";
import { AddressInfo, Server } from "node:net";
import { join } from "node:path";
import { TLSSocket } from "node:tls";
import { request } from "undici";
import { parseSnapshotYAML } from "../../hack/translate";
import { Secret, snapshotOf } from "../../capabilities/snapshot";
import { translate } from "../../capabilities/translate";
import { Caddy, loadGateway, startCaddy } from "../support/caddy";
import { listenerPortOffset } from "../support/ports";
import { withLoopbackEndpoints } from "../support/loopback";

const LOCAL = "127.0.0.1";
const PORT_OFFSET = listenerPortOffset();
const golden = join(__dirname, "..", "golden", "backend-tls.in.yaml");
const objects = parseSnapshotYAML(readFileSync(golden, "utf8"));
const serving = objects.find(
  o => o.kind === "Secret" && o.metadata.name === "backend-serving",
) as Secret;
const cert = Buffer.from(serving.data!["tls.crt"], "base64").toString();
const key = Buffer.from(serving.data!["tls.key"], "base64").toString();
/** Services whose endpoints speak plain HTTP; every other one serves HTTPS. */
const PLAIN = new Set(["default/plain-1"]);

let caddy: Caddy | undefined;
const servers: (Server | HTTPSServer)[] = [];

async function backend(name: string): Promise<number> {
  const handler = (
    req: import("node:http").IncomingMessage,
    res: import("node:http").ServerResponse,
  ): void => {
    const socket = req.socket as TLSSocket & { servername?: string };
    res.setHeader("content-type", "application/json");
    res.end(
      JSON.stringify({
        backend: name,
        tls: socket.encrypted === true,
        sni: socket.servername ?? null,
      }),
    );
  };
  const server = PLAIN.has(name)
    ? createHTTPServer(handler)
    : createHTTPSServer({ cert, key }, handler);
  servers.push(server);
  await new Promise<void>(r => server.listen(0, LOCAL, () => r()));
  return (server.address() as AddressInfo).port;
}

async function get(
  path: string,
): Promise<{ status: number; json?: { backend: string; tls: boolean; sni: string | null } }> {
  const res = await request(`http://${LOCAL}:${80 + PORT_OFFSET}${path}`, {
    reset: true,
    headers: { host: "app.test" },
  });
  const text = await res.body.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, json };
}

beforeAll(async () => {
  caddy = await startCaddy({ name: "backend-tls" });
  const out = await withLoopbackEndpoints(objects, backend, { host: LOCAL, allEndpoints: true });
  const result = translate(snapshotOf(out));
  await loadGateway(caddy, result.gateways[0]!, LOCAL);
}, 120_000);

afterAll(async () => {
  await caddy?.stop();
  await Promise.all(servers.map(s => new Promise(r => s.close(r))));
});

describe("BackendTLSPolicy through real Caddy", () => {
  it("connects over TLS with the policy's hostname as SNI, trusting the ConfigMap's CA", async () => {
    const r = await get("/ca/x");
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ backend: "default/secure-1", tls: true, sni: "backend.internal" });
  });

  it("verifies the certificate against the hostname: a policy naming another host fails (502)", async () => {
    expect((await get("/wrong-name")).status).toBe(502);
  });

  it("System trust does not include a private CA (502), so verification is really on", async () => {
    expect((await get("/system")).status).toBe(502);
  });

  it("answers 500 where the policy cannot be applied (no valid CA, wrong kind)", async () => {
    expect((await get("/bad-ca")).status).toBe(500);
    expect((await get("/kind")).status).toBe(500);
  });

  it("subjectAltNames: one of them must be on the certificate, the hostname is then only the SNI", async () => {
    const r = await get("/san/x"); // hostname sni-only.internal, SAN backend.internal: served
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ backend: "default/san-1", tls: true, sni: "sni-only.internal" });
    expect((await get("/other-san")).status).toBe(502); // hostname matches, the SAN does not
  });

  it("leaves Services without a policy on plain HTTP", async () => {
    const r = await get("/plain");
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ backend: "default/plain-1", tls: false, sni: null });
  });

  it("a rule mixing a TLS and a plain backend: the TLS one is served, the other share gets 500", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await get("/mixed")).status);
    expect(statuses.sort()).toEqual([200, 200, 500, 500]);
  });
});
