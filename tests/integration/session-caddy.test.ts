/**
 * Session persistence (route rule `sessionPersistence`, GEP-1619) through real proxies: the
 * golden `session-persistence` is loaded as each flavour would run it, every EndpointSlice
 * pointed at its own backend on loopback that answers with its name. A session's first
 * response carries the token (Set-Cookie, or the header in header mode); every request that
 * sends it back reaches the same backend; new sessions are spread by the rule's weights.
 * Bundled (our kengine_session policy) runs every rule; stock Caddy's `cookie` policy on the
 * Caddy flavour runs the plain and the Permanent cookie; Caddy 2.8 (Kengine) only the plain
 * cookie. The other rules are dropped on those flavours (404 here). Loopback only.
 */
import { readFileSync } from "node:fs";
import { IncomingMessage, Server, ServerResponse, createServer } from "node:http";
import { AddressInfo } from "node:net";
import { join } from "node:path";
import { request } from "undici";
import { translate } from "../../capabilities/translate";
import { ProxyFlavor } from "../../capabilities/flavor/proxy-flavor";
import { snapshotOf } from "../../capabilities/snapshot";
import { parseSnapshotYAML } from "../../hack/translate";
import { Caddy, loadGateway, startCaddy } from "../support/caddy";
import { withProxyFlavor } from "../support/flavor";
import { withLoopbackEndpoints } from "../support/loopback";
import { listenerPortOffset } from "../support/ports";

const PORT_OFFSET = listenerPortOffset();
const GOLDEN = join(__dirname, "..", "golden", "session-persistence.in.yaml");
const HOST = "sticky.example.com";
/** Requests sent back with a session's token: every one must reach the session's backend. */
const FOLLOW_UPS = 30;

const servers: Server[] = [];
/** Backend port → the EndpointSlice it stands for (`default/web-1`, …). */
const names = new Map<number, string>();

async function backend(id: string): Promise<number> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on("end", () => res.writeHead(200, { "content-type": "text/plain" }).end(id));
  });
  servers.push(server);
  await new Promise<void>(r => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as AddressInfo).port;
  names.set(port, id);
  return port;
}

let objects: ReturnType<typeof parseSnapshotYAML> = [];

beforeAll(async () => {
  objects = await withLoopbackEndpoints(parseSnapshotYAML(readFileSync(GOLDEN, "utf8")), backend);
});

afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise(r => s.close(r));
  }
});

async function load(caddy: Caddy, flavor: ProxyFlavor): Promise<void> {
  const result = translate(snapshotOf(withProxyFlavor(objects, flavor)));
  expect(result.gateways).toHaveLength(1);
  await loadGateway(caddy, result.gateways[0]!);
}

interface Answer {
  readonly status: number;
  readonly backend: string;
  readonly setCookie: readonly string[];
  readonly headers: Record<string, string | string[] | undefined>;
}

async function get(path: string, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await request(`http://127.0.0.1:${80 + PORT_OFFSET}${path}`, {
    headers: { host: HOST, ...headers },
  });
  const body = await res.body.text();
  const raw = res.headers["set-cookie"];
  return {
    status: res.statusCode,
    backend: body,
    setCookie: raw === undefined ? [] : Array.isArray(raw) ? raw : [raw],
    headers: res.headers,
  };
}

/** `name=value` of the one Set-Cookie, and its attributes (lower-cased names). */
function cookieOf(a: Answer): { pair: string; attrs: Map<string, string> } {
  expect(a.setCookie).toHaveLength(1);
  const [pair, ...rest] = a.setCookie[0].split(";").map(s => s.trim());
  const attrs = new Map(
    rest.map(p => {
      const [k, v = ""] = p.split("=");
      return [k.toLowerCase(), v] as [string, string];
    }),
  );
  return { pair, attrs };
}

/**
 * Starts sessions until two of them landed on different backends (proof that the choice is
 * not fixed), then sends each session's token back FOLLOW_UPS times: all must reach it.
 */
async function sticks(path: string, token: (a: Answer) => Record<string, string>): Promise<void> {
  const sessions: { backend: string; send: Record<string, string> }[] = [];
  for (let i = 0; i < 40 && new Set(sessions.map(s => s.backend)).size < 2; i++) {
    const first = await get(path);
    expect(first.status).toBe(200);
    sessions.push({ backend: first.backend, send: token(first) });
  }
  expect(new Set(sessions.map(s => s.backend)).size).toBe(2);
  for (const s of sessions.slice(-2))
    for (let i = 0; i < FOLLOW_UPS; i++) {
      const again = await get(path, s.send);
      expect(again).toMatchObject({ status: 200, backend: s.backend });
    }
}

const byCookie = (a: Answer): Record<string, string> => ({ cookie: cookieOf(a).pair });

describe.each<[ProxyFlavor, "caddy" | "caddy-2.8"]>([
  ["Bundled", "caddy"],
  ["Caddy", "caddy"],
  ["Kengine", "caddy-2.8"],
])("session persistence on the %s flavour", (flavor, peer) => {
  let caddy: Caddy | undefined;
  beforeAll(async () => {
    caddy = await startCaddy({ name: `session-${flavor.toLowerCase()}`, peer });
    await load(caddy, flavor);
  });
  afterAll(() => caddy?.stop());

  it("a cookie session (no lifetime) sticks to its backend; the cookie is on path /", async () => {
    const first = await get("/cookie");
    const { pair, attrs } = cookieOf(first);
    expect(pair.startsWith("sticky=")).toBe(true);
    expect(attrs.get("path")).toBe("/");
    // Caddy 2.8's cookie policy sets neither HttpOnly nor SameSite; later ones (and ours) do.
    expect(attrs.has("httponly")).toBe(flavor !== "Kengine");
    expect(attrs.has("max-age") || attrs.has("expires")).toBe(false);
    // The token does not show the backend's address.
    expect(pair).not.toContain("127.0.0.1");
    await sticks("/cookie", byCookie);
  });

  if (flavor === "Kengine") {
    it("rules Caddy 2.8 cannot run are dropped (404)", async () => {
      for (const p of ["/permanent", "/scoped", "/timed", "/header"])
        expect((await get(p)).status).toBe(404);
    });
    return;
  }

  it("a Permanent cookie carries Max-Age = absoluteTimeout (5m)", async () => {
    const { attrs } = cookieOf(await get("/permanent"));
    expect(attrs.get("max-age")).toBe("300");
    await sticks("/permanent", byCookie);
  });

  if (flavor === "Caddy") {
    it("rules stock Caddy cannot run are dropped (404)", async () => {
      for (const p of ["/scoped", "/timed", "/header"]) expect((await get(p)).status).toBe(404);
    });
    return;
  }

  it("a cookie path, and a session cookie with an absolute lifetime (no Max-Age)", async () => {
    expect(cookieOf(await get("/scoped")).attrs.get("path")).toBe("/scoped");
    await sticks("/scoped", byCookie);
    const timed = cookieOf(await get("/timed"));
    expect(timed.attrs.has("max-age") || timed.attrs.has("expires")).toBe(false);
    await sticks("/timed", byCookie);
  });

  it("a header session: the response names the session in X-Session, no cookie", async () => {
    const first = await get("/header");
    expect(first.setCookie).toEqual([]);
    expect(typeof first.headers["x-session"]).toBe("string");
    await sticks("/header", a => ({ "x-session": a.headers["x-session"] as string }));
  });

  it("new sessions follow the rule's weights (web 3 : other 1); each then sticks", async () => {
    const counts = new Map<string, number>();
    const n = 200;
    for (let i = 0; i < n; i++) {
      const a = await get("/weighted");
      expect(cookieOf(a).pair.startsWith("kengine-session-")).toBe(true);
      const svc = a.backend.startsWith("default/web-") ? "web" : a.backend;
      counts.set(svc, (counts.get(svc) ?? 0) + 1);
    }
    const web = (counts.get("web") ?? 0) / n;
    expect(web).toBeGreaterThan(0.65);
    expect(web).toBeLessThan(0.85);
    expect(counts.get("default/other-1")).toBe(n - (counts.get("web") ?? 0));
    await sticks("/weighted", byCookie);
  });
});
