/**
 * A TCP proxy on loopback that can stop forwarding without closing: `freeze()` makes every
 * connection open now half-open (bytes in either direction are dropped, both sockets stay
 * open), as a middlebox that lost its state does; connections opened later are forwarded.
 */
import { AddressInfo, Server, Socket, connect, createServer } from "node:net";

export interface TcpProxy {
  readonly port: number;
  /** Connections open now stop forwarding (and stay open). */
  freeze(): void;
  /** Connections forwarded so far (opened). */
  readonly opened: number;
  close(): Promise<void>;
}

export async function startTcpProxy(host: string, port: number): Promise<TcpProxy> {
  const pairs = new Set<{ client: Socket; upstream: Socket; frozen: boolean }>();
  /** Frozen connections whose server side ended: their clients are held open until close(). */
  const frozen = new Set<{ client: Socket; upstream: Socket; frozen: boolean }>();
  let opened = 0;
  const server: Server = createServer(client => {
    opened++;
    const upstream = connect({ host, port });
    const pair = { client, upstream, frozen: false };
    pairs.add(pair);
    const forward = (from: Socket, to: Socket) =>
      from.on("data", (chunk: Buffer) => {
        if (!pair.frozen) to.write(chunk);
      });
    forward(client, upstream);
    forward(upstream, client);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client
      .on("close", () => {
        frozen.delete(pair);
        end();
      })
      .on("error", end);
    // A frozen connection's client never learns that the server ended its side.
    const upstreamEnded = () => {
      if (!pair.frozen) return end();
      pairs.delete(pair);
      frozen.add(pair);
      upstream.destroy();
    };
    upstream.on("close", upstreamEnded).on("error", upstreamEnded);
  });
  await new Promise<void>(resolve => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    freeze: () => {
      for (const p of pairs) p.frozen = true;
    },
    get opened() {
      return opened;
    },
    close: async () => {
      for (const p of [...pairs, ...frozen]) {
        p.client.destroy();
        p.upstream.destroy();
      }
      await new Promise<void>(resolve => server.close(() => resolve()));
    },
  };
}
