/**
 * Differential test of the header rules (capabilities/validation/fields.ts) against real
 * Caddy. Caddy itself accepts every config below (/load answers 200: its `headers` handler
 * and header matcher do not validate names or values), so the verdict compared is the
 * observable behaviour, per use:
 * - request header set (RequestHeaderModifier) and forwarded by reverse_proxy: faithful when
 *   the backend receives exactly that header (Go's transport refuses invalid ones: 502);
 * - response header set (ResponseHeaderModifier): faithful when a conforming HTTP client
 *   (Node's parser) reads exactly that header (Go drops invalid names, turns CR/LF into
 *   spaces and sends other control characters raw, which the client refuses);
 * - header match, as the translator emits an Exact match (`header_regexp` with the quoted
 *   value): faithful when a raw HTTP/1.1 request carrying the header matches (Go's server
 *   answers 400 to a request with an invalid header);
 * - remove: faithful when exactly the named header disappears (Caddy treats `*` as a
 *   wildcard).
 * Each must equal the rule's verdict (no problems ⇔ faithful). Values are escaped with the
 * translator's escapePlaceholders, as in every pushed config, so `{…}` must arrive literally.
 */
import { Server, createServer, get } from "node:http";
import { AddressInfo, createConnection } from "node:net";
import { Caddy, startCaddy } from "../support/caddy";
import { freePort } from "../support/ports";
import { escapePlaceholders } from "../../capabilities/caddy";
import { PERSISTENT_HTTP_NETWORK } from "../../capabilities/caddy/config";
import { quoteRE2 } from "../../capabilities/validation/regex";
import {
  checkHeaderName,
  checkHeaderValue,
  checkMatchedHeaderName,
  checkRemovedHeaderName,
} from "../../capabilities/validation/fields";

const goodNames = [
  "X-Test",
  "x_y",
  "a!#$%&'*+-.^_`|~9",
  "X-Kengine-1",
  "x.y",
  "X-A*",
  "~`|^",
  "a",
  "1",
  "ABC-def",
  "X-Test-123",
];
const badNames = [
  "X Test",
  "X:Test",
  "X{a}",
  "Ü-X",
  'X"Q',
  "X(1)",
  "X/Y",
  "X@Y",
  "X\tY",
  "X,Y",
  "X;Y",
  "X=Y",
  "X[1]",
  "X?Y",
  "X\\Y",
  "X<Y>",
];
const goodValues = [
  "plain",
  "with space",
  "tab\there",
  "{http.request.host}",
  "a\\{b}",
  "{file./etc/hostname}",
  "é ü 😀",
  "%00",
  "a=b; c",
  "}{",
  'with "quotes"',
  "comma, list",
  "%E2%82%AC",
  "a\u00a0b",
  "a\u0085b",
  "a\u2028b",
  "=",
  "~!@#$%^&*()_+`-=[]\\;',./<>?:|",
];
const badValues = [
  "a\r\nX-Injected: 1",
  "a\nb",
  "a\rb",
  "a\u0000b",
  "a\u0001b",
  "a\u001fb",
  "a\u007fb",
  "a\u000bb",
  "a\u001bb",
  "a\u0008b",
  "a\u000cb",
  "\u0000",
];
const removeNames = ["X-Gone", "*", "X-*", "*-Gone", "*Gon*"];

let caddy: Caddy | undefined;
let upstream: Server | undefined;
let httpPort = 0;
let upstreamPort = 0;

/**
 * Loads a probe server on `httpPort` (our listener module's network, as the translator emits for
 * the bundled proxy: a reload then drops no connection) and returns /load's status.
 */
async function load(handlers: object[], match: object[] = [{ path: ["/*"] }]): Promise<number> {
  const config = {
    admin: { listen: caddy!.adminAddress, config: { persist: false } },
    apps: {
      http: {
        servers: {
          probe: {
            listen: [`${PERSISTENT_HTTP_NETWORK}/127.0.0.1:${httpPort}`],
            automatic_https: { disable: true },
            routes: [
              { match, handle: handlers, terminal: true },
              { handle: [{ handler: "static_response", status_code: 404, body: "unmatched" }] },
            ],
          },
        },
      },
    },
  };
  return (await caddy!.load(config)).status;
}

const proxy = { handler: "reverse_proxy", upstreams: [{ dial: "" }] };
const toUpstream = () => ({ ...proxy, upstreams: [{ dial: `127.0.0.1:${upstreamPort}` }] });

/** GET through Caddy with Node's (strict) client: status, raw headers, or the client's error. */
function fetchRaw(
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; raw: string[]; body: string } | { error: string }> {
  return new Promise(resolve => {
    const req = get({ host: "127.0.0.1", port: httpPort, path, headers, agent: false }, res => {
      const chunks: Buffer[] = [];
      res.on("data", (d: Buffer) => chunks.push(d));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          raw: res.rawHeaders,
          body: Buffer.concat(chunks).toString("utf8"),
        }),
      );
    });
    req.on("error", e => resolve({ error: String(e) }));
  });
}

/** A raw HTTP/1.1 request (bytes as given) and the status line's code. */
function rawRequest(headerLine: Buffer): Promise<number> {
  return new Promise(resolve => {
    const sock = createConnection({ host: "127.0.0.1", port: httpPort }, () => {
      sock.write(
        Buffer.concat([
          Buffer.from("GET /m HTTP/1.1\r\nHost: probe\r\n"),
          headerLine,
          Buffer.from("\r\nConnection: close\r\n\r\n"),
        ]),
      );
    });
    let got = "";
    sock.on("data", d => (got += d.toString("latin1")));
    sock.on("close", () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(got)?.[1] ?? 0)));
    sock.on("error", () => resolve(0));
  });
}

const wire = (v: string): string => Buffer.from(v, "utf8").toString("latin1");
const pairs = (raw: string[]): [string, string][] =>
  raw.flatMap((x, i) => (i % 2 === 0 ? [[x, raw[i + 1]] as [string, string]] : []));
const has = (raw: string[], name: string, value: string): boolean =>
  pairs(raw).some(([n, v]) => n.toLowerCase() === name.toLowerCase() && v === wire(value));

beforeAll(async () => {
  caddy = await startCaddy({ name: "hdr" });
  httpPort = await freePort();
  upstream = createServer((req, res) => {
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify(req.rawHeaders));
  });
  upstream.on("clientError", (_e, s) => s.end("HTTP/1.1 400 Bad Request\r\n\r\n"));
  await new Promise<void>(r => upstream!.listen(0, "127.0.0.1", () => r()));
  upstreamPort = (upstream.address() as AddressInfo).port;
}, 120_000);

afterAll(async () => {
  await caddy?.stop();
  await new Promise<void>(r => (upstream ? upstream.close(() => r()) : r()));
});

const cases: [string, string][] = [
  ...goodNames.map(n => [n, "v"] as [string, string]),
  ...badNames.map(n => [n, "v"] as [string, string]),
  ...goodValues.map(v => ["X-Probe", v] as [string, string]),
  ...badValues.map(v => ["X-Probe", v] as [string, string]),
];
const ruleAccepts = (name: string, value: string, use: "match" | "modifier") =>
  (use === "match" ? checkMatchedHeaderName : checkHeaderName)("n", name).length === 0 &&
  checkHeaderValue("v", value, use).length === 0;

describe("header rules agree with real Caddy", () => {
  it("has valid and invalid cases on both sides", () => {
    expect(cases.length + removeNames.length).toBeGreaterThanOrEqual(60);
    const v = cases.map(([n, x]) => ruleAccepts(n, x, "modifier"));
    expect(v.filter(Boolean).length).toBeGreaterThanOrEqual(12);
    expect(v.filter(x => !x).length).toBeGreaterThanOrEqual(16);
  });

  it.each(cases)("request header %j: %j", async (name, value) => {
    expect(
      await load([
        { handler: "headers", request: { set: { [name]: [escapePlaceholders(value)] } } },
        toUpstream(),
      ]),
    ).toBe(200);
    const res = await fetchRaw("/");
    const faithful =
      "status" in res && res.status === 200 && has(JSON.parse(res.body) as string[], name, value);
    expect({ name, value, faithful }).toEqual({
      name,
      value,
      faithful: ruleAccepts(name, value, "modifier"),
    });
  });

  it.each(cases)("response header %j: %j", async (name, value) => {
    expect(
      await load([
        { handler: "headers", response: { set: { [name]: [escapePlaceholders(value)] } } },
        { handler: "static_response", status_code: 200, body: "ok" },
      ]),
    ).toBe(200);
    const res = await fetchRaw("/");
    const faithful = "status" in res && res.status === 200 && has(res.raw, name, value);
    expect({ name, value, faithful }).toEqual({
      name,
      value,
      faithful: ruleAccepts(name, value, "modifier"),
    });
  });

  it.each(cases)("header match %j: %j", async (name, value) => {
    const match = [{ header_regexp: { [name]: { pattern: `^${quoteRE2(value)}$` } } }];
    expect(
      await load([{ handler: "static_response", status_code: 200, body: "matched" }], match),
    ).toBe(200);
    const status = await rawRequest(Buffer.from(`${name}: ${value}`, "utf8"));
    expect({ name, value, faithful: status === 200 }).toEqual({
      name,
      value,
      faithful: ruleAccepts(name, value, "match"),
    });
  });

  it.each(removeNames)("remove %j", async name => {
    expect(await load([{ handler: "headers", request: { delete: [name] } }, toUpstream()])).toBe(
      200,
    );
    // The named header (a valid token, `*` included) must go; the others must stay.
    const res = await fetchRaw("/", { [name]: "1", "X-Gone": "1", "X-Keep": "1" });
    const got = "status" in res ? (JSON.parse(res.body) as string[]) : [];
    const faithful =
      !has(got, name, "1") &&
      has(got, "X-Keep", "1") &&
      (name === "X-Gone" || has(got, "X-Gone", "1"));
    expect({ name, faithful }).toEqual({
      name,
      faithful: checkRemovedHeaderName("r", name).length === 0,
    });
  });
});
