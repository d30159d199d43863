/**
 * The admin client's kept connections against a real Caddy (our build) on its mTLS management
 * listener: route-table requests share a connection; every other request, and the first
 * route-table request after a `/load`, opens its own. A config load by someone else (a
 * bring-your-own proxy's operator) replaces the management server under a kept connection:
 * the requests after it still succeed.
 *
 * A new connection is seen as a new verified handshake: the client records the proxy's
 * certificate afresh on each one (`peerCertificate` returns a new record).
 */
import { bootstrapConfig } from "../../capabilities/caddy";
import { ManagedCaddy, startManagedCaddy } from "../support/managed-caddy";

let proxy: ManagedCaddy;

beforeAll(async () => {
  proxy = await startManagedCaddy("keepalive");
}, 120_000);

afterAll(() => proxy?.stop());

const tables = async () => {
  const r = await proxy.client.routeTables(proxy.endpoint);
  expect(r).toEqual({ ok: true, value: [] });
};
const seen = () => proxy.client.peerCertificate(proxy.endpoint);

describe("admin client connections to a real proxy", () => {
  it("route-table requests share a few kept connections; other requests open their own", async () => {
    // undici's pool opened a second connection on the second request in our runs
    const kept = new Set<unknown>();
    for (let i = 0; i < 10; i++) {
      await tables();
      kept.add(seen());
    }
    expect(kept.size).toBeLessThanOrEqual(2);
    const fresh = new Set<unknown>();
    for (let i = 0; i < 10; i++) {
      const id = await proxy.client.runsConfig(proxy.endpoint, "c".repeat(64));
      expect(id).toEqual({ ok: true, value: false });
      fresh.add(seen());
    }
    expect(fresh.size).toBe(10);
  });

  it("after a /load, the next route-table request is on a new connection", async () => {
    await tables();
    const before = seen();
    const bootstrap = bootstrapConfig(proxy.spec);
    if (!bootstrap.ok) throw new Error(bootstrap.error.join("; "));
    const loaded = await proxy.client.load(
      proxy.endpoint,
      Buffer.from(JSON.stringify(bootstrap.value)),
      true,
    );
    expect(loaded).toEqual({ ok: true, value: undefined });
    const afterLoad = seen();
    expect(afterLoad).not.toBe(before);
    await tables();
    expect(seen()).not.toBe(afterLoad);
  });

  it("a config loaded by someone else under a kept connection: the next requests succeed", async () => {
    const bootstrap = bootstrapConfig(proxy.spec);
    if (!bootstrap.ok) throw new Error(bootstrap.error.join("; "));
    for (let round = 0; round < 3; round++) {
      await tables();
      const kept = seen();
      // Through the plain admin endpoint: the management server (and its connections) replaced.
      const other = { ...bootstrap.value, logging: { logs: { default: { level: "INFO" } } } };
      const r = await proxy.caddy.load(
        round % 2 === 0 ? other : (bootstrap.value as Record<string, unknown>),
      );
      expect(r.status).toBe(200);
      await tables();
      expect(seen()).not.toBe(kept);
    }
  });

  it("a proxy's kept connections are forgotten once idle (a proxy that went away leaves nothing)", async () => {
    await tables();
    expect(proxy.client.keptProxies).toBe(1);
    // undici closes a kept connection after 4 s idle (its keepAliveTimeout)
    for (const deadline = Date.now() + 15_000; Date.now() < deadline; )
      if (proxy.client.keptProxies === 0) break;
      else await new Promise(r => setTimeout(r, 200));
    expect(proxy.client.keptProxies).toBe(0);
    await tables();
    expect(proxy.client.keptProxies).toBe(1);
  }, 30_000);
});
