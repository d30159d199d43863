import { request as httpsRequest } from "node:https";

export interface HTTPSReply {
  readonly status: number;
  readonly body: string;
}

/**
 * GET `path` over TLS from 127.0.0.1:`port` with server name `sni` and Host `host`, trusting any
 * certificate, on a new connection. node:https, not undici: undici derives the server name from
 * the Host header, and these tests need the two to differ.
 */
export function httpsGet(port: number, sni: string, host: string, path = "/"): Promise<HTTPSReply> {
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
      },
      res => {
        let body = "";
        res.on("data", (d: Buffer) => (body += d.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}
