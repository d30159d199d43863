/** The little of the DNS wire format (RFC 1035) the stand-in DNS server needs (pure). */

export interface DnsQuery {
  readonly id: number;
  readonly flags: number;
  readonly name: string;
  readonly qtype: number;
  readonly qclass: number;
  /** The question section's bytes, copied into the answer. */
  readonly question: Buffer;
}

export const TYPE_A = 1;
const CLASS_IN = 1;

/** Parses a query with one question; undefined if it is not one. */
export function parseQuery(buf: Buffer): DnsQuery | undefined {
  if (buf.length < 12) return undefined;
  const flags = buf.readUInt16BE(2);
  if (flags & 0x8000) return undefined; // a response, not a query
  if (buf.readUInt16BE(4) !== 1) return undefined;
  const labels: string[] = [];
  let i = 12;
  for (;;) {
    if (i >= buf.length) return undefined;
    const len = buf[i];
    if (len === 0) break;
    if (len > 63 || i + 1 + len > buf.length) return undefined; // no compression in questions
    labels.push(buf.subarray(i + 1, i + 1 + len).toString("latin1"));
    i += 1 + len;
  }
  i += 1;
  if (i + 4 > buf.length) return undefined;
  return {
    id: buf.readUInt16BE(0),
    flags,
    name: labels.join(".") + ".",
    qtype: buf.readUInt16BE(i),
    qclass: buf.readUInt16BE(i + 2),
    question: buf.subarray(12, i + 4),
  };
}

/**
 * An authoritative answer: for an A/IN question, one A record holding `answerIPv4` (like
 * CoreDNS's whoami, which reports the client's address); for anything else, no records.
 */
export function buildAnswer(q: DnsQuery, answerIPv4: string | undefined): Buffer {
  const octets = answerIPv4?.split(".").map(Number);
  const withA =
    q.qtype === TYPE_A &&
    q.qclass === CLASS_IN &&
    octets?.length === 4 &&
    octets.every(o => Number.isInteger(o) && o >= 0 && o <= 255);
  const header = Buffer.alloc(12);
  header.writeUInt16BE(q.id, 0);
  // QR=1, opcode copied, AA=1, RD copied, RA=0, RCODE=0
  header.writeUInt16BE(0x8000 | (q.flags & 0x7800) | 0x0400 | (q.flags & 0x0100), 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(withA ? 1 : 0, 6);
  const parts = [header, q.question];
  if (withA) {
    const rr = Buffer.alloc(16);
    rr.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
    rr.writeUInt16BE(TYPE_A, 2);
    rr.writeUInt16BE(CLASS_IN, 4);
    rr.writeUInt32BE(0, 6); // TTL
    rr.writeUInt16BE(4, 10);
    octets!.forEach((o, k) => rr.writeUInt8(o, 12 + k));
    parts.push(rr);
  }
  return Buffer.concat(parts);
}
