/**
 * The ACME client against a real Pebble, without the cluster: External Account Binding
 * (refused without it and with a wrong MAC, the CA's words kept; accepted with the right one),
 * a whole HTTP-01 issuance while Pebble rejects a fifth of all nonces (the badNonce retry), and
 * the CA's errors word for word. Needs no cluster (it runs in the integration project: processes).
 */
import { X509Certificate, generateKeyPairSync, randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { Server, createServer } from "node:http";
import { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Pebble, startPebble } from "../../hack/pebble";
import { AcmeClient, Order, httpsTransport, problemText } from "../../capabilities/acme/client";
import { certificationRequest } from "../../capabilities/acme/csr";
import { keyAuthorization } from "../../capabilities/acme/jws";

const newKey = () => generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey;
const tick = () => new Promise(r => setTimeout(r, 200));

describe("ACME client against Pebble", () => {
  const answers = new Map<string, string>();
  let http: Server;
  const pebbles: Pebble[] = [];
  const mac = randomBytes(32).toString("base64url");

  beforeAll(async () => {
    http = createServer((req, res) => res.end(answers.get(req.url?.split("/").pop() ?? "") ?? ""));
    await new Promise<void>(r => http.listen(0, "127.0.0.1", r));
  });
  afterAll(async () => {
    for (const p of pebbles) await p.close();
    http.close();
  });
  const pebble = async (o: { eab?: Record<string, string>; nonceRejectPercent?: number }) => {
    const p = await startPebble({
      dir: mkdtempSync(join(tmpdir(), "kg-acme-client-")),
      resolve: () => "127.0.0.1",
      httpPort: (http.address() as AddressInfo).port,
      ...o,
    });
    pebbles.push(p);
    return p;
  };
  const client = (p: Pebble) => new AcmeClient(p.directory, newKey(), httpsTransport([p.tlsCaPem]));

  it("binds the account to an external account, and says what the CA says when it cannot", async () => {
    const p = await pebble({ eab: { "kid-1": mac } });
    const none = await client(p).account({ email: "ops@example.com" });
    expect(!none.ok && problemText(none.error)).toMatch(/^externalAccountRequired: /);
    const wrong = await client(p).account({
      eab: { keyId: "kid-1", hmacKey: randomBytes(32).toString("base64url") },
    });
    expect(!wrong.ok && problemText(wrong.error)).toMatch(
      /^unauthorized: external account binding/,
    );
    const good = await client(p).account({
      email: "ops@example.com",
      eab: { keyId: "kid-1", hmacKey: mac },
    });
    expect(good.ok && good.value).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/my-account\//);
  });

  it("issues over HTTP-01 while the CA rejects a fifth of the nonces", async () => {
    const p = await pebble({ nonceRejectPercent: 20 });
    const c = client(p);
    const must = <T>(
      r: { ok: true; value: T } | { ok: false; error: { type: string; detail: string } },
    ): T => {
      if (!r.ok) throw new Error(problemText(r.error));
      return r.value;
    };
    must(await c.account({ email: "ops@example.com" }));
    const placed = must(await c.newOrder(["shop.example.com"]));
    for (const url of placed.value.authorizations) {
      const authz = must(await c.getAuthorization(url)).value;
      const ch = authz.challenges.find(x => x.type === "http-01")!;
      answers.set(ch.token, keyAuthorization(ch.token, c.jwk));
      must(await c.respond(ch.url));
      while (must(await c.getAuthorization(url)).value.status === "pending") await tick();
      expect(must(await c.getAuthorization(url)).value.status).toBe("valid");
    }
    const certKey = newKey();
    let order: Order = must(
      await c.finalize(placed.value.finalize, certificationRequest(certKey, ["shop.example.com"])),
    ).value;
    while (order.status === "processing") {
      await tick();
      order = must(await c.getOrder(placed.location!)).value;
    }
    expect(order.status).toBe("valid");
    const leaf = new X509Certificate(must(await c.certificate(order.certificate!)));
    expect(leaf.subjectAltName).toBe("DNS:shop.example.com");
    expect(leaf.checkPrivateKey(certKey)).toBe(true);
    expect(p.orders()).toBe(1);
  });

  it("reports a refused order and a CA that is gone in words a user can act on", async () => {
    const p = await pebble({});
    const c = client(p);
    expect((await c.account({})).ok).toBe(true);
    const bad = await c.newOrder(["shop.example.com."]);
    expect(!bad.ok && problemText(bad.error)).toMatch(
      /^malformed: Order included a DNS identifier with a value ending in a period/,
    );
    await p.stop();
    const gone = await c.newOrder(["shop.example.com"]);
    expect(!gone.ok && gone.error.type).toBe("network");
    expect(!gone.ok && gone.error.detail).toMatch(/^POST https:\/\/127\.0\.0\.1:\d+\/order-plz: /);
  });

  it("closes when Pebble was already ended by a signal (Ctrl-C in `npm start`'s terminal)", async () => {
    const p = await pebble({});
    const pid = p.pid();
    expect(pid).toBeDefined();
    process.kill(pid!, "SIGINT");
    // Until the process is gone (kill -0 throws ESRCH), then close() must return, not wait
    // for an exit event that already happened (the hang `npm start` had on Ctrl-C).
    for (let alive = true; alive; await new Promise(r => setTimeout(r, 50)))
      try {
        process.kill(pid!, 0);
      } catch {
        alive = false;
      }
    await new Promise(r => setTimeout(r, 200)); // Node has seen the exit
    await expect(p.close()).resolves.toBeUndefined();
  });
});
