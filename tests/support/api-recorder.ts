/**
 * A TLS proxy on loopback in front of the local kube-apiserver that records every request
 * passing through it (method, path, response status). A client given a kubeconfig that points
 * here keeps its own credentials (the Authorization header passes unchanged), so the API
 * server authorizes each request as that client; the record says which permissions it used
 * and which it was refused. Watches stream through unchanged.
 *
 * It runs in its own process (this file, run by tsx): a test's synchronous kubectl calls block
 * the test's event loop, and an admission webhook served by the module under test would then
 * wait for a proxy that cannot answer. Requests are appended to a JSON-lines file.
 */
import { spawn, spawnSync } from "node:child_process";
import {
  appendFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { IncomingMessage, ServerResponse } from "node:http";
import { createServer, request } from "node:https";
import { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface RecordedRequest {
  readonly method: string;
  /** Path and query, as sent. */
  readonly url: string;
  readonly status: number;
}

export interface ApiRecorder {
  /** https://127.0.0.1:<port> */
  readonly server: string;
  /** PEM of the recorder's own serving certificate (self-signed, for 127.0.0.1). */
  readonly caPem: string;
  readonly requests: () => readonly RecordedRequest[];
  close(): Promise<void>;
}

export interface ApiRecorderOptions {
  /** The API server, e.g. https://127.0.0.1:6443. */
  readonly upstream: string;
  /** PEM of the CA that signed the API server's certificate. */
  readonly upstreamCa: string;
}

/** A throwaway self-signed certificate for 127.0.0.1 (openssl, like hack/cluster.sh). */
function selfSigned(): { cert: string; key: string } {
  const dir = mkdtempSync(join(tmpdir(), "kg-recorder-"));
  try {
    const r = spawnSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
        "-days",
        "1",
        "-subj",
        "/CN=kengine-api-recorder",
        "-addext",
        "subjectAltName=IP:127.0.0.1",
      ],
      { encoding: "utf8" },
    );
    if (r.status !== 0) throw new Error(`openssl failed: ${r.stderr}`);
    return {
      cert: readFileSync(join(dir, "cert.pem"), "utf8"),
      key: readFileSync(join(dir, "key.pem"), "utf8"),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The proxy itself (in the recorder process): records to `logFile`, resolves with its address. */
async function serve(
  o: ApiRecorderOptions & { readonly logFile: string },
): Promise<{ server: string; caPem: string }> {
  const { cert, key } = selfSigned();
  const upstream = new URL(o.upstream);
  const record = (r: RecordedRequest) => appendFileSync(o.logFile, `${JSON.stringify(r)}\n`);
  const forward = (req: IncomingMessage, res: ServerResponse) => {
    const up = request(
      {
        hostname: upstream.hostname,
        port: upstream.port || 443,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: upstream.host },
        ca: o.upstreamCa,
      },
      upRes => {
        record({ method: req.method ?? "", url: req.url ?? "", status: upRes.statusCode ?? 0 });
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        upRes.pipe(res);
      },
    );
    up.on("error", e => {
      record({ method: req.method ?? "", url: req.url ?? "", status: 0 });
      if (!res.headersSent) res.writeHead(502);
      res.end(String(e));
    });
    res.on("close", () => up.destroy());
    req.pipe(up);
  };
  const server = createServer({ cert, key }, forward);
  await new Promise<void>(resolve => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { server: `https://127.0.0.1:${port}`, caPem: cert };
}

/** Starts the recorder process; close() stops it. */
export async function startApiRecorder(o: ApiRecorderOptions): Promise<ApiRecorder> {
  const dir = mkdtempSync(join(tmpdir(), "kg-recorder-run-"));
  const logFile = join(dir, "requests.jsonl");
  const options = join(dir, "options.json");
  writeFileSync(options, JSON.stringify({ ...o, logFile }), { mode: 0o600 });
  const tsx = join(__dirname, "..", "..", "node_modules", ".bin", "tsx");
  const child = spawn(tsx, [__filename.replace(/\.js$/, ".ts"), options], {
    env: { ...process.env, KG_API_RECORDER: "1" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<void>(resolve => child.once("exit", () => resolve()));
  const ready = await new Promise<{ server: string; caPem: string }>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const line = out.split("\n").find(l => l.startsWith("{"));
      if (line) resolve(JSON.parse(line) as { server: string; caPem: string });
    });
    child.once("exit", code => reject(new Error(`the API recorder exited (${code}): ${out}`)));
  });
  return {
    ...ready,
    requests: () =>
      existsSync(logFile)
        ? readFileSync(logFile, "utf8")
            .split("\n")
            .filter(Boolean)
            .map(l => JSON.parse(l) as RecordedRequest)
        : [],
    close: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

if (process.env.KG_API_RECORDER === "1" && process.argv[2]?.endsWith("options.json")) {
  const o = JSON.parse(readFileSync(process.argv[2], "utf8")) as ApiRecorderOptions & {
    logFile: string;
  };
  serve(o).then(
    r => process.stdout.write(`${JSON.stringify(r)}\n`),
    e => {
      process.stderr.write(`api recorder: ${String(e)}\n`);
      process.exit(1);
    },
  );
}

/** The RBAC attributes of a request: what the API server's authorizer checks. */
export interface RequestAttributes {
  readonly verb: string;
  readonly apiGroup: string;
  /** resource, or resource/subresource */
  readonly resource: string;
  readonly namespace?: string;
  readonly name?: string;
}

/** Maps a recorded resource request to its RBAC attributes (undefined for non-resource URLs). */
export function attributesOf(
  r: Pick<RecordedRequest, "method" | "url">,
): RequestAttributes | undefined {
  const url = new URL(r.url, "https://x");
  const parts = url.pathname.split("/").filter(Boolean).map(decodeURIComponent);
  let apiGroup: string;
  let rest: string[];
  if (parts[0] === "api" && parts.length >= 3) {
    apiGroup = "";
    rest = parts.slice(2);
  } else if (parts[0] === "apis" && parts.length >= 4) {
    apiGroup = parts[1];
    rest = parts.slice(3);
  } else return undefined;
  let namespace: string | undefined;
  if (rest[0] === "namespaces" && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const [resource, name, subresource] = rest;
  if (!resource) return undefined;
  const watch = ["true", "1"].includes(url.searchParams.get("watch") ?? "");
  const method = r.method.toUpperCase();
  const verb =
    method === "GET"
      ? name
        ? "get"
        : watch
          ? "watch"
          : "list"
      : method === "POST"
        ? "create"
        : method === "PATCH"
          ? "patch"
          : method === "PUT"
            ? "update"
            : method === "DELETE"
              ? name
                ? "delete"
                : "deletecollection"
              : method.toLowerCase();
  return {
    verb,
    apiGroup,
    resource: subresource ? `${resource}/${subresource}` : resource,
    namespace,
    name,
  };
}
