/**
 * Retries of attempts that got no response (HTTPRouteRetryConnectionError,
 * HTTPRouteRetryBackendTimeout) through a real Caddy: the golden `retry-errors` is loaded
 * with its Service pointed at a flaky backend on loopback that fails chosen attempts by
 * resetting the connection (TCP RST), closing it, or answering later than the
 * backendRequest timeout, and counts every attempt it receives. The bundled proxy (Caddy
 * 2.11.9) must retry all of them for any method; Caddy 2.8 (the Kengine flavour, no
 * `is_transport_error`) retries only GET. Loopback only.
 */
import { IncomingMessage, Server, ServerResponse, createServer } from "node:http";
import { AddressInfo } from "node:net";
import { join } from "node:path";
import { request } from "undici";
import { ProxyFlavor } from "../../capabilities/flavor/proxy-flavor";
import { Caddy, loadGoldenOnLoopback, startCaddy } from "../support/caddy";
import { listenerPortOffset } from "../support/ports";

const PORT_OFFSET = listenerPortOffset();
const GOLDEN = join(__dirname, "..", "golden", "retry-errors.in.yaml");
/** The golden's backendRequest timeout is 300 ms; a slow attempt answers well after it. */
const SLOW_MS = 1500;
/** A late attempt: 500 after this long; two of them exceed the 500 ms request timeout, one does not. */
const LATE_MS = 300;

/** Attempts the backend received, per `id` query value. */
const attempts = new Map<string, number>();
/** Bodies of the attempts that were answered, per `id`. */
const bodies = new Map<string, string[]>();

/**
 * The flaky backend. `?id=X&fail=a,b,…`: attempt n of request X fails as the n-th item says,
 * later attempts are answered 200 with the body echoed:
 * - `reset`: the connection is reset (RST) once the request was read, no response;
 * - `close`: the connection is closed (FIN) once the request was read, no response;
 * - `slow`: 500 after SLOW_MS (past the backendRequest timeout);
 * - `late`: 500 after LATE_MS;
 * - a number: that status at once.
 * Answers close their connection unless `keep=1`: Go's transport (in every Caddy) resends a
 * bodyless GET by itself when a kept-alive connection fails, which would add attempts the
 * proxy's retries do not count (the last test shows it).
 */
function flaky(): Server {
  return createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    try {
      for await (const c of req) chunks.push(c as Buffer);
    } catch {
      return;
    }
    const q = new URL(req.url ?? "/", "http://x").searchParams;
    const id = q.get("id") ?? "";
    const n = (attempts.get(id) ?? 0) + 1;
    attempts.set(id, n);
    const how = (q.get("fail") ?? "").split(",").filter(Boolean)[n - 1];
    if (q.get("keep") !== "1") res.shouldKeepAlive = false;
    if (how === "reset") return req.socket.resetAndDestroy();
    if (how === "close") return req.socket.destroy();
    if (how === "slow" || how === "late") {
      await new Promise(r => setTimeout(r, how === "slow" ? SLOW_MS : LATE_MS));
      if (!res.destroyed) res.writeHead(500).end(`${how} attempt ${n}`);
      return;
    }
    if (how !== undefined) return void res.writeHead(Number(how)).end(`attempt ${n}`);
    const body = Buffer.concat(chunks).toString();
    bodies.set(id, [...(bodies.get(id) ?? []), body]);
    res.writeHead(200, { "content-type": "text/plain" }).end(`ok ${n} ${body}`);
  });
}

let backend: Server;
let backendPort = 0;

beforeAll(async () => {
  backend = flaky();
  await new Promise<void>(r => backend.listen(0, "127.0.0.1", () => r()));
  backendPort = (backend.address() as AddressInfo).port;
});

afterAll(async () => {
  backend.closeAllConnections();
  await new Promise(r => backend.close(r));
});

/** Loads the golden, as `flavor` proxies would run it, into `caddy`. */
async function load(caddy: Caddy, flavor: ProxyFlavor): Promise<void> {
  await loadGoldenOnLoopback(caddy, GOLDEN, flavor, backendPort);
}

let seq = 0;

/**
 * Sends one request through Caddy to `path` with `fail` as the backend's plan; returns the
 * status and how many attempts reached the backend. Each call has its own id, so no attempt
 * of an earlier request is counted. A new client connection each time (`reset`).
 */
async function send(
  path: string,
  fail: string,
  init: { method?: "GET" | "POST" | "PUT"; body?: string; keep?: boolean } = {},
): Promise<{ status: number; attempts: number; text: string }> {
  const id = `r${++seq}`;
  const keep = init.keep ? "&keep=1" : "";
  const url = `http://127.0.0.1:${80 + PORT_OFFSET}${path}?id=${id}&fail=${fail}${keep}`;
  const res = await request(url, {
    method: init.method ?? "GET",
    reset: true,
    headers: { host: "retry.test" },
    ...(init.body !== undefined && { body: init.body }),
  });
  const text = await res.body.text();
  return { status: res.statusCode, attempts: attempts.get(id) ?? 0, text };
}

describe("the bundled proxy retries attempts that got no response", () => {
  let caddy: Caddy | undefined;
  beforeAll(async () => {
    caddy = await startCaddy({ name: "retry-caddy" });
    await load(caddy, "Bundled");
  });
  afterAll(() => caddy?.stop());

  it("without a retry stanza a reset, a close or a backend timeout is answered at once", async () => {
    expect(await send("/no-retry", "reset")).toMatchObject({ status: 502, attempts: 1 });
    expect(await send("/no-retry", "close")).toMatchObject({ status: 502, attempts: 1 });
    expect(await send("/no-retry", "slow")).toMatchObject({ status: 504, attempts: 1 });
  });

  it("connection errors (attempts: 3): reset or closed attempts are retried up to 3 times", async () => {
    expect(await send("/connection", "reset,reset")).toMatchObject({ status: 200, attempts: 3 });
    expect(await send("/connection", "close,reset,close")).toMatchObject({
      status: 200,
      attempts: 4,
    });
    // 1 + 3 attempts failed: the last failure is the answer.
    expect(await send("/connection", "reset,reset,reset,reset")).toMatchObject({
      status: 502,
      attempts: 4,
    });
  });

  it("connection errors: a POST and a PUT are retried too, with their whole body", async () => {
    const post = await send("/connection", "reset,close", { method: "POST", body: "payload" });
    expect(post).toMatchObject({ status: 200, attempts: 3 });
    expect(post.text).toBe("ok 3 payload");
    const put = await send("/connection", "reset", { method: "PUT", body: "x".repeat(100_000) });
    expect(put).toMatchObject({ status: 200, attempts: 2 });
    expect(put.text).toBe(`ok 2 ${"x".repeat(100_000)}`);
  });

  it("backend timeouts (attempts: 2, backendRequest 300ms): an attempt cut by the timeout is retried", async () => {
    expect(await send("/backend-timeout", "slow,slow")).toMatchObject({ status: 200, attempts: 3 });
    expect(await send("/backend-timeout", "slow", { method: "POST", body: "b" })).toMatchObject({
      status: 200,
      attempts: 2,
      text: "ok 2 b",
    });
    // Every attempt timed out: a timeout error, after 1 + 2 attempts.
    expect(await send("/backend-timeout", "slow,slow,slow")).toMatchObject({
      status: 504,
      attempts: 3,
    });
  });

  it("with status codes (500, 503; attempts: 2): failures without a response count among the attempts", async () => {
    expect(await send("/codes", "reset,500")).toMatchObject({ status: 200, attempts: 3 });
    expect(await send("/codes", "503,slow")).toMatchObject({ status: 200, attempts: 3 });
    expect(await send("/codes", "slow,close", { method: "POST", body: "c" })).toMatchObject({
      status: 200,
      attempts: 3,
    });
    expect(await send("/codes", "500,reset,503")).toMatchObject({ status: 503, attempts: 3 });
    // A status that is not listed is the answer, however it came after a retried failure.
    expect(await send("/codes", "reset,502")).toMatchObject({ status: 502, attempts: 2 });
  });

  it("the request timeout (500ms) bounds the retries: an attempt still under way then gives 504", async () => {
    // 300 ms for a 500, then the retry answers: within the request timeout.
    expect(await send("/request-timeout", "late")).toMatchObject({ status: 200, attempts: 2 });
    // The retry's 500 would come at 600 ms: the client gets 504 instead of the backend's 500.
    expect(await send("/request-timeout", "late,late")).toMatchObject({ status: 504, attempts: 2 });
    expect(
      await send("/request-timeout", "late,late", { method: "POST", body: "b" }),
    ).toMatchObject({ status: 504, attempts: 2 });
  });

  it("a bodyless GET reset on a kept-alive connection is resent once by Go's transport itself, even without a retry stanza", async () => {
    // The first answer keeps its connection open; the next request goes out on it.
    expect(await send("/no-retry", "", { keep: true })).toMatchObject({ status: 200 });
    expect(await send("/no-retry", "reset")).toMatchObject({ status: 200, attempts: 2 });
    // Not a POST: its failure is the answer.
    expect(await send("/no-retry", "", { keep: true })).toMatchObject({ status: 200 });
    expect(await send("/no-retry", "reset", { method: "POST", body: "p" })).toMatchObject({
      status: 502,
      attempts: 1,
    });
  });
});

describe("Caddy 2.8 (the Kengine flavour) retries only GET requests that got no response", () => {
  let caddy: Caddy | undefined;
  beforeAll(async () => {
    caddy = await startCaddy({ name: "retry-caddy-28", peer: "caddy-2.8" });
    await load(caddy, "Kengine");
  });
  afterAll(() => caddy?.stop());

  it("GET is retried after a reset and a backend timeout; POST is not", async () => {
    expect(await send("/connection", "reset,close")).toMatchObject({ status: 200, attempts: 3 });
    expect(await send("/backend-timeout", "slow")).toMatchObject({ status: 200, attempts: 2 });
    expect(await send("/connection", "reset", { method: "POST", body: "p" })).toMatchObject({
      status: 502,
      attempts: 1,
    });
  });
});
