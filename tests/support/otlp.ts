/**
 * A minimal OTLP trace receiver on loopback for integration tests: OTLP/HTTP (POST /v1/traces
 * with an ExportTraceServiceRequest in protobuf: what Caddy 2.11's autoexport sends for
 * OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf, its default; the Go exporter has no http/json), or
 * OTLP/gRPC over cleartext HTTP/2 (Caddy 2.8 exports with otlptracegrpc only): the same
 * message in gRPC's length-prefixed framing, answered with an empty response, grpc-status 0.
 * Decodes only what the tests read: span names and string attributes. No library: the
 * protobuf wire format's varint and length-delimited fields are enough.
 */
import { Server, createServer } from "node:http";
import { Http2Server, createServer as createHttp2Server } from "node:http2";
import { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";

export interface ReceivedSpan {
  readonly name: string;
  readonly attributes: Readonly<Record<string, string>>;
  /** Resource attributes of the batch (service.name, …). */
  readonly resource: Readonly<Record<string, string>>;
}

type Field = { readonly no: number; readonly wire: number; readonly value: bigint | Buffer };

/** The fields of one protobuf message, in order. */
export function protoFields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let i = 0;
  const varint = (): bigint => {
    let v = 0n;
    for (let shift = 0n; ; shift += 7n) {
      if (i >= buf.length) throw new Error("truncated varint");
      const b = buf[i++];
      v |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return v;
    }
  };
  while (i < buf.length) {
    const key = varint();
    const no = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (wire === 0) out.push({ no, wire, value: varint() });
    else if (wire === 1 || wire === 5) {
      const n = wire === 1 ? 8 : 4;
      out.push({ no, wire, value: buf.subarray(i, i + n) });
      i += n;
    } else if (wire === 2) {
      const n = Number(varint());
      out.push({ no, wire, value: buf.subarray(i, i + n) });
      i += n;
    } else throw new Error(`unsupported wire type ${wire}`);
  }
  return out;
}

const messages = (fields: Field[], no: number): Buffer[] =>
  fields.filter(f => f.no === no && f.wire === 2).map(f => f.value as Buffer);
const text = (fields: Field[], no: number): string => messages(fields, no)[0]?.toString() ?? "";

/** KeyValue list → key → string value (AnyValue.string_value; other types as their text). */
function attributes(kvs: Buffer[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of kvs) {
    const f = protoFields(kv);
    const any = messages(f, 2)[0];
    const v = any ? protoFields(any)[0] : undefined;
    out[text(f, 1)] =
      v === undefined ? "" : Buffer.isBuffer(v.value) ? v.value.toString() : String(v.value);
  }
  return out;
}

/** The spans of an ExportTraceServiceRequest. */
export function decodeTraces(body: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const rs of messages(protoFields(body), 1)) {
    const rsf = protoFields(rs);
    const resourceMsg = messages(rsf, 1)[0];
    const resource = resourceMsg ? attributes(messages(protoFields(resourceMsg), 1)) : {};
    for (const ss of messages(rsf, 2))
      for (const sp of messages(protoFields(ss), 2)) {
        const f = protoFields(sp);
        spans.push({ name: text(f, 5), attributes: attributes(messages(f, 9)), resource });
      }
  }
  return spans;
}

export interface OtlpReceiver {
  /** http://127.0.0.1:<port> (OTEL_EXPORTER_OTLP_ENDPOINT). */
  readonly endpoint: string;
  /** Resolves with the first span received (now or later) that `match` accepts. */
  span(match: (s: ReceivedSpan) => boolean): Promise<ReceivedSpan>;
  close(): Promise<void>;
}

/** The messages of a gRPC request body (5-byte prefix: compressed flag, length). */
function grpcMessages(body: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i + 5 <= body.length; ) {
    const n = body.readUInt32BE(i + 1);
    const msg = body.subarray(i + 5, i + 5 + n);
    out.push(body[i] === 1 ? gunzipSync(msg) : msg);
    i += 5 + n;
  }
  return out;
}

type Waiting = { match: (s: ReceivedSpan) => boolean; resolve: (s: ReceivedSpan) => void };

export async function startOtlpReceiver(
  protocol: "http/protobuf" | "grpc" = "http/protobuf",
): Promise<OtlpReceiver> {
  const received: ReceivedSpan[] = [];
  const waiting: Waiting[] = [];
  const receive = (spans: ReceivedSpan[]) => {
    for (const s of spans) {
      received.push(s);
      for (let i = waiting.length - 1; i >= 0; i--)
        if (waiting[i].match(s)) waiting.splice(i, 1)[0].resolve(s);
    }
  };
  if (protocol === "grpc") {
    const h2: Http2Server = createHttp2Server();
    h2.on("stream", (stream, headers) => {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        const ok =
          headers[":path"] === "/opentelemetry.proto.collector.trace.v1.TraceService/Export";
        if (ok) for (const m of grpcMessages(Buffer.concat(chunks))) receive(decodeTraces(m));
        stream.respond(
          { ":status": 200, "content-type": "application/grpc" },
          { waitForTrailers: true },
        );
        stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": ok ? "0" : "12" }));
        stream.end(ok ? Buffer.alloc(5) : undefined);
      });
    });
    await new Promise<void>(r => h2.listen(0, "127.0.0.1", () => r()));
    return {
      endpoint: `http://127.0.0.1:${(h2.address() as AddressInfo).port}`,
      span: match => spanOf(received, waiting, match),
      close: () => new Promise(r => h2.close(() => r())),
    };
  }
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        res.writeHead(404).end();
        return;
      }
      const body = Buffer.concat(chunks);
      const gzip = req.headers["content-encoding"] === "gzip";
      receive(decodeTraces(gzip ? gunzipSync(body) : body));
      res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
    });
  });
  await new Promise<void>(r => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    span: match => spanOf(received, waiting, match),
    close: async () => {
      server.closeAllConnections();
      await new Promise(r => server.close(r));
    },
  };
}

function spanOf(
  received: readonly ReceivedSpan[],
  waiting: Waiting[],
  match: (s: ReceivedSpan) => boolean,
): Promise<ReceivedSpan> {
  return new Promise(resolve => {
    const found = received.find(match);
    if (found) resolve(found);
    else waiting.push({ match, resolve });
  });
}
