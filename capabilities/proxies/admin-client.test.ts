import { MockAgent } from "undici";
import { AdminClient, describeAdminError, ProxyEndpoint } from "./admin-client";
import { SecretPem } from "../pki/secret";

const endpoint: ProxyEndpoint = {
  name: "gw-0",
  address: "10.0.0.5",
  port: 9443,
  serverName: "gw-0.gw-admin.default.svc",
};
const origin = "https://10.0.0.5:9443";
const hash = "a".repeat(64);
const creds = {
  caPem: "",
  certificatePem: "",
  privateKey: new SecretPem("-----BEGIN PRIVATE KEY-----\nTOPSECRET\n-----END PRIVATE KEY-----\n"),
};

let agent: MockAgent;
let client: AdminClient;
beforeEach(() => {
  agent = new MockAgent();
  agent.disableNetConnect();
  client = new AdminClient(creds, { dispatcher: agent });
});
afterEach(async () => {
  await client.close();
  await agent.close();
});

describe("AdminClient", () => {
  it("POSTs /load with JSON, the proxy's server name as Host, and a closing connection", async () => {
    let seen: { headers?: unknown; body?: unknown } = {};
    agent
      .get(origin)
      .intercept({ path: "/load", method: "POST" })
      .reply(200, opts => {
        seen = opts;
        return "";
      });
    expect(await client.load(endpoint, Buffer.from('{"a":1}'))).toEqual({
      ok: true,
      value: undefined,
    });
    expect(seen.headers).toMatchObject({
      host: "gw-0.gw-admin.default.svc:9443",
      "content-type": "application/json",
      connection: "close",
    });
    expect(Buffer.from(seen.body as Buffer).toString()).toBe('{"a":1}');
  });

  it("keeps Caddy's refusal message verbatim", async () => {
    agent
      .get(origin)
      .intercept({ path: "/load", method: "POST" })
      .reply(
        400,
        '{"error":"loading config: loading new config: http app module: start: listening on :80: bind: address already in use"}\n',
      );
    const r = await client.load(endpoint, Buffer.from("{}"));
    expect(r).toEqual({
      ok: false,
      error: {
        kind: "rejected",
        status: 400,
        message:
          "loading config: loading new config: http app module: start: listening on :80: bind: address already in use",
      },
    });
    if (!r.ok)
      expect(describeAdminError(r.error)).toBe(
        "proxy rejected the request (HTTP 400): loading config: loading new config: http app module: start: listening on :80: bind: address already in use",
      );
  });

  it("reports a non-JSON error body as text", async () => {
    agent.get(origin).intercept({ path: "/load", method: "POST" }).reply(502, "bad gateway\n");
    expect(await client.load(endpoint, Buffer.from("{}"))).toEqual({
      ok: false,
      error: { kind: "rejected", status: 502, message: "bad gateway" },
    });
  });

  it("classifies connection failures without quoting keys", async () => {
    agent
      .get(origin)
      .intercept({ path: "/load", method: "POST" })
      .replyWithError(
        Object.assign(new Error("connect ECONNREFUSED 10.0.0.5:9443"), { code: "ECONNREFUSED" }),
      );
    const r = await client.load(endpoint, Buffer.from("{}"));
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.kind).toBe("connect");
      expect(r.error.message).toContain("ECONNREFUSED");
      expect(JSON.stringify(r)).not.toContain("TOPSECRET");
    }
  });

  it("asks for the config marker: 200 means it runs the hash, 404 means it does not", async () => {
    agent
      .get(origin)
      .intercept({ path: `/id/kengine-config-${hash}/@id`, method: "GET" })
      .reply(200, `"kengine-config-${hash}"`);
    expect(await client.runsConfig(endpoint, hash)).toEqual({ ok: true, value: true });
    agent
      .get(origin)
      .intercept({ path: `/id/kengine-config-${hash}/@id`, method: "GET" })
      .reply(404, `{"error":"unknown object ID 'kengine-config-${hash}'"}`);
    expect(await client.runsConfig(endpoint, hash)).toEqual({ ok: true, value: false });
    agent
      .get(origin)
      .intercept({ path: `/id/kengine-config-${hash}/@id`, method: "GET" })
      .reply(403, '{"error":"host not allowed: x"}');
    expect(await client.runsConfig(endpoint, hash)).toEqual({
      ok: false,
      error: { kind: "rejected", status: 403, message: "host not allowed: x" },
    });
    expect((await client.runsConfig(endpoint, "../../load")).ok).toBe(false);
  });

  it("reads config with its Etag", async () => {
    agent
      .get(origin)
      .intercept({ path: "/config/apps/http", method: "GET" })
      .reply(200, '{"servers":{}}', { headers: { etag: '"/config/apps/http abc"' } });
    expect(await client.getConfig(endpoint, "/apps/http")).toEqual({
      ok: true,
      value: { body: '{"servers":{}}', etag: '"/config/apps/http abc"' },
    });
  });

  it("times out a proxy that does not answer", async () => {
    const slow = new AdminClient(creds, { dispatcher: agent, readTimeoutMs: 50 });
    agent.get(origin).intercept({ path: "/config/", method: "GET" }).reply(200, "{}").delay(1000);
    const r = await slow.getConfig(endpoint);
    expect(r).toEqual({ ok: false, error: { kind: "timeout", message: expect.any(String) } });
  });

  it("brackets IPv6 addresses", async () => {
    agent.get("https://[fd00::5]:9443").intercept({ path: "/load", method: "POST" }).reply(200, "");
    expect((await client.load({ ...endpoint, address: "fd00::5" }, Buffer.from("{}"))).ok).toBe(
      true,
    );
  });
});

describe("AdminClient route-table requests on kept connections", () => {
  const info = { id: "ns/gw/http-80", version: 2, hash: "b".repeat(64), hosts: 1, label: "x" };
  const coded = (code: string) => Object.assign(new Error(`socket: ${code}`), { code });

  it("keep their connection alive (no `connection: close`)", async () => {
    let seen: { headers?: unknown } = {};
    agent
      .get(origin)
      .intercept({ path: "/kengine/route-tables/", method: "GET" })
      .reply(200, opts => {
        seen = opts;
        return JSON.stringify([info]);
      });
    expect((await client.routeTables(endpoint)).ok).toBe(true);
    expect(seen.headers).not.toHaveProperty("connection");
  });

  it("send a delta once more when the kept connection was closed under it", async () => {
    const path = "/kengine/route-tables/ns%2Fgw%2Fhttp-80";
    agent.get(origin).intercept({ path, method: "POST" }).replyWithError(coded("UND_ERR_SOCKET"));
    let retried: { headers?: unknown } = {};
    agent
      .get(origin)
      .intercept({ path, method: "POST" })
      .reply(200, opts => {
        retried = opts;
        return JSON.stringify(info);
      });
    const r = await client.postRouteTable(endpoint, info.id, "{}", "a".repeat(64));
    expect(r).toEqual({ ok: true, value: info });
    // the second try is on a new connection, closed after it
    expect(retried.headers).toMatchObject({
      connection: "close",
      "if-match": `"${"a".repeat(64)}"`,
    });
  });

  it("do not send again when the proxy refuses the connection (it is down)", async () => {
    const path = "/kengine/route-tables/ns%2Fgw%2Fhttp-80";
    agent.get(origin).intercept({ path, method: "POST" }).replyWithError(coded("ECONNREFUSED"));
    // a second answer would turn the failure into success if the client sent again
    agent.get(origin).intercept({ path, method: "POST" }).reply(200, JSON.stringify(info));
    const r = await client.postRouteTable(endpoint, info.id, "{}", "a".repeat(64));
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error.kind).toBe("connect");
  });
});
