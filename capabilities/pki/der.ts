/**
 * The few DER (ASN.1) encoders an X.509 v3 certificate needs. node:crypto signs and parses
 * certificates but cannot build one, and node-forge cannot sign with ECDSA; this fills the
 * gap with plain byte building. Every function returns one complete TLV.
 */

const length = (n: number): Buffer => {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
};

/** A TLV with the given tag byte around the content. */
export const tlv = (tag: number, content: Buffer): Buffer =>
  Buffer.concat([Buffer.from([tag]), length(content.length), content]);

export const sequence = (...items: readonly Buffer[]): Buffer => tlv(0x30, Buffer.concat(items));
export const set = (...items: readonly Buffer[]): Buffer => tlv(0x31, Buffer.concat(items));
export const boolean = (value: boolean): Buffer => tlv(0x01, Buffer.from([value ? 0xff : 0x00]));
export const octetString = (content: Buffer): Buffer => tlv(0x04, content);
export const utf8String = (value: string): Buffer => tlv(0x0c, Buffer.from(value, "utf8"));
export const nullValue = (): Buffer => Buffer.from([0x05, 0x00]);
/** `[n] EXPLICIT` wrapper (constructed, context-specific). */
export const explicit = (n: number, inner: Buffer): Buffer => tlv(0xa0 | n, inner);
/** `[n] IMPLICIT` primitive (context-specific), e.g. GeneralName's dNSName is [2]. */
export const implicitPrimitive = (n: number, content: Buffer): Buffer => tlv(0x80 | n, content);

/** A non-negative INTEGER from big-endian magnitude bytes, minimally encoded. */
export const unsignedInteger = (magnitude: Buffer): Buffer => {
  let start = 0;
  while (start < magnitude.length - 1 && magnitude[start] === 0) start++;
  const trimmed = magnitude.subarray(start);
  const content =
    trimmed.length > 0 && trimmed[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed;
  return tlv(0x02, content.length === 0 ? Buffer.from([0]) : content);
};
export const smallInteger = (n: number): Buffer => unsignedInteger(Buffer.from([n & 0xff]));

/** BIT STRING whose bits are whole bytes (keys, signatures). */
export const bitString = (content: Buffer, unusedBits = 0): Buffer =>
  tlv(0x03, Buffer.concat([Buffer.from([unusedBits]), content]));

/** OBJECT IDENTIFIER from dotted text. */
export const oid = (dotted: string): Buffer => {
  const arcs = dotted.split(".").map(Number);
  const [a, b, ...rest] = arcs;
  const out: number[] = [a! * 40 + b!];
  for (const arc of rest) {
    const chunk: number[] = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128))
      chunk.unshift(0x80 | (v & 0x7f));
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
};

const two = (n: number): string => String(n).padStart(2, "0");

/** RFC 5280 Time: UTCTime through 2049, GeneralizedTime from 2050; whole seconds, UTC. */
export const time = (d: Date): Buffer => {
  const y = d.getUTCFullYear();
  const rest = `${two(d.getUTCMonth() + 1)}${two(d.getUTCDate())}${two(d.getUTCHours())}${two(d.getUTCMinutes())}${two(d.getUTCSeconds())}Z`;
  return y >= 1950 && y < 2050
    ? tlv(0x17, Buffer.from(`${two(y % 100)}${rest}`, "ascii"))
    : tlv(0x18, Buffer.from(`${y}${rest}`, "ascii"));
};
