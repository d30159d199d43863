/**
 * BackendTLSPolicy on TLSRoutes through real Caddy (caddy-l4): the golden
 * `tls-terminate-backend-tls` is translated with its EndpointSlices pointed at node TLS echo
 * servers on 127.0.0.1 serving the certificate from its Secret `backend-serving`
 * (backend.internal, signed by the CA in ConfigMap `backend-ca`; `plain` is a plain TCP echo).
 * We assert that behind a Terminate listener the proxy re-encrypts with the policy's hostname
 * as SNI and verifies the backend against it, refuses connections where the policy cannot be
 * run as written, and that a Passthrough listener and a TCPRoute hand the backend the client's
 * own TLS (the policy does not apply there).
 */
import { readFileSync } from "node:fs";
import { AddressInfo, Server, Socket, createServer as createNetServer } from "node:net";
import { join } from "node:path";
import {
  ConnectionOptions,
  TLSSocket,
  connect as tlsConnect,
  createServer as createTLSServer,
} from "node:tls";
import { parseSnapshotYAML } from "../../hack/translate";
import { ConfigMap, Secret, snapshotOf } from "../../capabilities/snapshot";
import { translate } from "../../capabilities/translate";
import { Caddy, loadGateway, startCaddy } from "../support/caddy";
import { listenerPortOffset } from "../support/ports";
import { withLoopbackEndpoints } from "../support/loopback";
import { echoExchange } from "../support/exchange";

const LOCAL = "127.0.0.1";
const PORT_OFFSET = listenerPortOffset();
const golden = join(__dirname, "..", "golden", "tls-terminate-backend-tls.in.yaml");
const objects = parseSnapshotYAML(readFileSync(golden, "utf8"));
const secret = (name: string): { cert: string; key: string } => {
  const s = objects.find(o => o.kind === "Secret" && o.metadata.name === name) as Secret;
  return {
    cert: Buffer.from(s.data!["tls.crt"], "base64").toString(),
    key: Buffer.from(s.data!["tls.key"], "base64").toString(),
  };
};
const SERVING = secret("backend-serving");
const LISTENER = secret("cert");
const BACKEND_CA = (
  objects.find(o => o.kind === "ConfigMap" && o.metadata.name === "backend-ca") as ConfigMap
).data!["ca.crt"];

let caddy: Caddy | undefined;
const servers: Server[] = [];

/** An echo server named `name`: TLS with the serving certificate (it reports the SNI), or plain TCP. */
async function backend(name: string): Promise<number> {
  const echo = (label: string) => (c: Socket) => c.on("data", d => c.write(`${label}:${d}`));
  const server =
    name === "default/plain-1"
      ? createNetServer(echo(`${name} plain`))
      : createTLSServer(SERVING, (s: TLSSocket) =>
          echo(`${name} sni=${(s as TLSSocket & { servername?: string }).servername ?? ""}`)(s),
        );
  servers.push(server);
  await new Promise<void>(r => server.listen(0, LOCAL, () => r()));
  return (server.address() as AddressInfo).port;
}

/** Opens TLS to listener `port`, sends `send`, returns what came back up to its echo (or the error). */
function exchange(port: number, opts: ConnectionOptions, send = "hello"): Promise<string> {
  return echoExchange(
    onConnect => tlsConnect({ host: LOCAL, port: port + PORT_OFFSET, ...opts }, onConnect),
    send,
  );
}

/** Through the Terminate listener (443): the proxy's certificate, trusted by its own CA. */
const terminated = (sni: string): Promise<string> =>
  exchange(443, { servername: sni, ca: LISTENER.cert });

beforeAll(async () => {
  caddy = await startCaddy({ name: "l4-backend-tls" });
  const out = await withLoopbackEndpoints(objects, backend, { host: LOCAL });
  const result = translate(snapshotOf(out));
  await loadGateway(caddy, result.gateways[0]!, LOCAL);
}, 120_000);

afterAll(async () => {
  await caddy?.stop();
  await Promise.all(servers.map(s => new Promise(r => s.close(r))));
});

describe("BackendTLSPolicy on TLSRoutes through real Caddy (caddy-l4)", () => {
  it("re-encrypts behind a Terminate listener with the policy's hostname as SNI, trusting its CA", async () => {
    expect(await terminated("secure.example.com")).toBe(
      "default/secure-1 sni=backend.internal:hello",
    );
  });

  it("verifies the backend's certificate against the hostname: a policy naming another host gets nothing", async () => {
    const got = await terminated("wrong-name.example.com");
    expect(got).not.toContain("default/wrongname-1");
    expect(got).toMatch(/^error:|^$/);
  });

  it("refuses connections where the policy cannot be run (CA not resolved, subjectAltNames)", async () => {
    for (const sni of ["bad-ca.example.com", "san.example.com"]) {
      const got = await terminated(sni);
      expect(got).not.toContain("default/");
      expect(got).toMatch(/^error:|^$/);
    }
  });

  it("leaves a Service without a policy on plain TCP", async () => {
    expect(await terminated("plain.example.com")).toBe("default/plain-1 plain:hello");
  });

  it("Passthrough listener and TCPRoute: the backend gets the client's own TLS", async () => {
    const direct: ConnectionOptions = { ca: BACKEND_CA, checkServerIdentity: () => undefined };
    expect(await exchange(8443, { ...direct, servername: "pass.example.com" })).toBe(
      "default/secure-1 sni=pass.example.com:hello",
    );
    expect(await exchange(7000, { ...direct, servername: "client.example" })).toBe(
      "default/secure-1 sni=client.example:hello",
    );
  });
});
