import { AdminClient, ClientCredentials, ProxyEndpoint } from "./admin-client";
import { AdminChannels, channelKey } from "./channels";
import { SecretPem } from "../pki/secret";

/** Records which identity answered; no network (the channel itself is proven against real Caddy). */
function fakeClient(id: string, log: string[]): AdminClient {
  return {
    load: async () => {
      log.push(`load via ${id}`);
      return { ok: true, value: undefined };
    },
    runsConfig: async () => {
      log.push(`check via ${id}`);
      return { ok: true, value: true };
    },
    close: async () => {
      log.push(`close ${id}`);
    },
  } as unknown as AdminClient;
}

const creds = (name: string): ClientCredentials => ({
  caPem: `ca-${name}`,
  certificatePem: `cert-${name}`,
  privateKey: new SecretPem(`key-${name}`),
});
const endpoint = (channel?: string): ProxyEndpoint => ({
  name: "ns/p",
  address: "10.244.0.9",
  port: 19443,
  serverName: "p.svc.ns.svc",
  channel,
});

describe("AdminChannels", () => {
  it("routes each endpoint to its identity, closes identities no longer named, swaps its own", async () => {
    const log: string[] = [];
    const channels = new AdminChannels(fakeClient("own", log), c =>
      fakeClient(c.certificatePem, log),
    );
    const a = channelKey(creds("a"));
    channels.setChannels(new Map([[a, creds("a")]]));
    await channels.load(endpoint(), Buffer.from("{}"));
    await channels.load(endpoint(a), Buffer.from("{}"));
    expect(await channels.runsConfig(endpoint("missing"), "x")).toEqual({
      ok: false,
      error: { kind: "connect", message: "no client credentials for channel missing" },
    });
    channels.setChannels(new Map());
    channels.replaceOwn(fakeClient("own2", log));
    await channels.runsConfig(endpoint(), "x");
    expect(log).toEqual([
      "load via own",
      "load via cert-a",
      "close cert-a",
      "close own",
      "check via own2",
    ]);
  });

  it("keys credentials by certificate, key and CA, never printing the key", () => {
    expect(channelKey(creds("a"))).toBe(channelKey(creds("a")));
    expect(channelKey(creds("a"))).not.toBe(channelKey({ ...creds("a"), caPem: "other" }));
    expect(channelKey(creds("a"))).toMatch(/^[0-9a-f]{16}$/);
  });
});
