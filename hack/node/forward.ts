/** TCP forwarding for hack/node/services.ts: the API server for pods. */
import { createConnection, createServer, Server, Socket } from "node:net";

/** host:port of an https:// server URL (pure). */
export function upstreamOf(server: string): { host: string; port: number } {
  const u = new URL(server);
  return { host: u.hostname.replace(/^\[|\]$/g, ""), port: Number(u.port || 443) };
}

/** A plain TCP forwarder from `listen` to `upstream`; stop() closes it and every connection. */
export async function forwardTcp(
  listen: { host: string; port: number },
  upstream: { host: string; port: number },
): Promise<{ stop(): void }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer(client => {
    const up = createConnection(upstream);
    for (const s of [client, up]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => {
        client.destroy();
        up.destroy();
      });
    }
    client.pipe(up);
    up.pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(listen, resolve);
  });
  return {
    stop() {
      server.close();
      for (const s of sockets) s.destroy();
    },
  };
}
