import { buildAnswer, parseQuery, TYPE_A } from "./dns-wire";

/** A query as a DNS client sends it: id 0xbeef, RD set, one question. */
function query(name: string, qtype = TYPE_A): Buffer {
  const labels = name
    .split(".")
    .filter(Boolean)
    .flatMap(l => [Buffer.from([l.length]), Buffer.from(l)]);
  const header = Buffer.from([0xbe, 0xef, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
  const tail = Buffer.from([0, qtype >> 8, qtype & 0xff, 0, 1]);
  return Buffer.concat([header, ...labels, tail]);
}

describe("stand-in DNS wire format", () => {
  it("parses a query's question", () => {
    const q = parseQuery(query("foo.bar.com."));
    expect(q).toMatchObject({ id: 0xbeef, name: "foo.bar.com.", qtype: 1, qclass: 1 });
    expect(parseQuery(Buffer.from([1, 2, 3]))).toBeUndefined();
    const response = query("x.");
    response[2] |= 0x80;
    expect(parseQuery(response)).toBeUndefined();
  });

  it("answers A with the given address and echoes id, question and RD", () => {
    const q = parseQuery(query("foo.bar.com."))!;
    const a = buildAnswer(q, "10.244.0.1");
    expect(a.readUInt16BE(0)).toBe(0xbeef);
    expect(a.readUInt16BE(2)).toBe(0x8000 | 0x0400 | 0x0100);
    expect([a.readUInt16BE(4), a.readUInt16BE(6)]).toEqual([1, 1]);
    expect(a.subarray(12, 12 + q.question.length)).toEqual(q.question);
    const rr = a.subarray(12 + q.question.length);
    expect(rr.readUInt16BE(0)).toBe(0xc00c);
    expect(rr.readUInt16BE(2)).toBe(TYPE_A);
    expect([...rr.subarray(12)]).toEqual([10, 244, 0, 1]);
  });

  it("answers other types with no records", () => {
    const a = buildAnswer(parseQuery(query("foo.bar.com.", 28))!, "10.244.0.1");
    expect(a.readUInt16BE(6)).toBe(0);
  });
});
