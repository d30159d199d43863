/**
 * No user string changes a placeholder or an expression, through real proxies: the
 * golden `placeholders` (regular-expression query matches with braces, query and header names
 * with every character the CRDs allow, placeholder-like values) is loaded into the bundled
 * proxy (Caddy 2.11.9) and into Caddy 2.8 (translated for the Kengine flavour), and requests
 * must match exactly what the route says, literally: a value `{http.request.host}` sent by a
 * client or written in the route is that text, never the host; CORS fields with `{env.HOME}`
 * and `{file.…}` arrive as that text, never the proxy's environment or files.
 * Loopback only.
 */
import { Server, createServer } from "node:http";
import { AddressInfo } from "node:net";
import { join } from "node:path";
import { request } from "undici";
import { ProxyFlavor } from "../../capabilities/flavor/proxy-flavor";
import { Caddy, loadGoldenOnLoopback, startCaddy } from "../support/caddy";
import { listenerPortOffset } from "../support/ports";

const GOLDEN = join(__dirname, "..", "golden", "placeholders.in.yaml");
const HOST = "placeholders.test";

let backend: Server;
let backendPort = 0;

beforeAll(async () => {
  backend = createServer((req, res) => res.writeHead(200).end(`echo ${req.url}`));
  await new Promise<void>(r => backend.listen(0, "127.0.0.1", () => r()));
  backendPort = (backend.address() as AddressInfo).port;
});

afterAll(async () => {
  backend.closeAllConnections();
  await new Promise(r => backend.close(r));
});

const q = (pairs: Record<string, string>): string =>
  Object.entries(pairs)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
    .join("&");

const NAME = "a!#$%&'*+-.^_`|~9";
const EXACT = "e!#$%&'*+-.^_`|~";
const HEADER = "h!#$%&'*+-^`|~9";

/** [what, path with query, request headers, expected status]. */
const cases: [string, string, Record<string, string>, number][] = [
  ["x{ab} and [0-9]{1,3} both match", `/two-regex?${q({ q: "x{ab}", n: "123" })}`, {}, 200],
  ["x{ab} is a literal, not a repeat", `/two-regex?${q({ q: "xab", n: "1" })}`, {}, 404],
  ["{1,3} is a repeat", `/two-regex?${q({ q: "x{ab}", n: "1234" })}`, {}, 404],
  [
    "names with every token character",
    `/names?${q({ [NAME]: "v", "Z|~": "abc", [EXACT]: "{http.request.host}" })}`,
    {},
    200,
  ],
  [
    "an exact value {http.request.host} is literal",
    `/names?${q({ [NAME]: "v", "Z|~": "abc", [EXACT]: HOST })}`,
    {},
    404,
  ],
  [
    "a regex on a token-named parameter is applied",
    `/names?${q({ [NAME]: "vv", "Z|~": "abc", [EXACT]: "{http.request.host}" })}`,
    {},
    404,
  ],
  ["a single regex query matches", `/single?${q({ h: HOST })}`, {}, 200],
  [
    "a client's {http.request.host} is not expanded",
    `/single?${q({ h: "{http.request.host}" })}`,
    {},
    404,
  ],
  [
    "header values and names literal",
    "/headers",
    { "X-Literal": "{http.request.host}", [HEADER]: "{abc}" },
    200,
  ],
  [
    "a header {http.request.host} is not the host",
    "/headers",
    { "X-Literal": HOST, [HEADER]: "{abc}" },
    404,
  ],
];

describe.each(["Bundled", "Kengine"] as ProxyFlavor[])("%s flavour", flavor => {
  let caddy: Caddy | undefined;

  beforeAll(async () => {
    caddy = await startCaddy({
      name: `placeholders-${flavor}`,
      peer: flavor === "Kengine" ? "caddy-2.8" : "caddy",
    });
    await loadGoldenOnLoopback(caddy, GOLDEN, flavor, backendPort);
  });

  afterAll(async () => {
    await caddy?.stop();
  });

  it.each(cases)("%s", async (_what, path, headers, status) => {
    const res = await request(`http://127.0.0.1:${80 + listenerPortOffset()}${path}`, {
      reset: true,
      headers: { host: HOST, ...headers },
    });
    const text = await res.body.text();
    expect({ status: res.statusCode }).toEqual({ status });
    if (status === 200 && path === "/headers")
      expect(res.headers["x-echo"]).toBe("{http.request.uri}\\{}");
    if (status === 200) expect(text).toMatch(/^echo /);
  });

  it("CORS allowMethods and exposeHeaders arrive as written, {env.*} and {file.*} unexpanded", async () => {
    const base = `http://127.0.0.1:${80 + listenerPortOffset()}/cors`;
    const origin = "https://a.test";
    const simple = await request(base, { reset: true, headers: { host: HOST, origin } });
    await simple.body.text();
    expect(simple.statusCode).toBe(200);
    expect(simple.headers["access-control-expose-headers"]).toBe(
      "{env.HOME}, x-{file./etc/hostname}",
    );
    const preflight = await request(base, {
      method: "OPTIONS",
      reset: true,
      headers: { host: HOST, origin, "access-control-request-method": "GET" },
    });
    await preflight.body.text();
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers["access-control-allow-methods"]).toBe("GET, {env.HOME}");
  });
});
