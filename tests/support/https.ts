import { request as httpsRequest } from "node:https";

export interface HTTPSReply {
  readonly status: number;
  readonly body: string;
}

/** A client certificate (PEM) to present in the TLS handshake. */
export interface ClientCertificate {
  readonly cert: string;
  readonly key: string;
}

/**
 * GET `path` over TLS from 127.0.0.1:`port` with server name `sni` and Host `host`, trusting any
 * certificate, on a new connection, presenting `client` when given. node:https, not undici:
 * undici derives the server name from the Host header, and these tests need the two to differ.
 */
export function httpsGet(
  port: number,
  sni: string,
  host: string,
  path = "/",
  client?: ClientCertificate,
): Promise<HTTPSReply> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: "127.0.0.1",
        port,
        path,
        servername: sni,
        headers: { host },
        rejectUnauthorized: false,
        agent: false,
        ...(client && { cert: client.cert, key: client.key }),
      },
      res => {
        let body = "";
        res.on("data", (d: Buffer) => (body += d.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end();
  });
}
