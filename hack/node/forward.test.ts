import { once } from "node:events";
import { createServer, connect, AddressInfo } from "node:net";
import { forwardTcp, upstreamOf } from "./forward";

describe("upstreamOf", () => {
  it.each([
    ["https://127.0.0.1:6443", { host: "127.0.0.1", port: 6443 }],
    ["https://127.0.0.1", { host: "127.0.0.1", port: 443 }],
    ["https://[::1]:7443", { host: "::1", port: 7443 }],
  ])("%s", (server, want) => expect(upstreamOf(server)).toEqual(want));
});

describe("forwardTcp", () => {
  it("carries bytes both ways, and stop() closes the listener and open connections", async () => {
    const upstream = createServer(s => s.on("data", d => s.write(`echo:${d.toString()}`)));
    upstream.listen(0, "127.0.0.1");
    await once(upstream, "listening");
    const up = upstream.address() as AddressInfo;
    // a free port: forwardTcp reports no address, so the test picks one first
    const probe = createServer();
    probe.listen(0, "127.0.0.1");
    await once(probe, "listening");
    const port = (probe.address() as AddressInfo).port;
    probe.close();
    await once(probe, "close");
    const f = await forwardTcp({ host: "127.0.0.1", port }, { host: "127.0.0.1", port: up.port });
    const c = connect(port, "127.0.0.1");
    c.write("hi");
    const [reply] = (await once(c, "data")) as [Buffer];
    expect(reply.toString()).toBe("echo:hi");
    f.stop();
    await once(c, "close");
    await expect(
      new Promise((resolve, reject) =>
        connect(port, "127.0.0.1").on("connect", resolve).on("error", reject),
      ),
    ).rejects.toThrow(/ECONNREFUSED/);
    upstream.close();
  });
});
