/**
 * A PKCS#10 certification request (RFC 2986) for an ECDSA P-256 key and a list of DNS
 * names, built with the DER writer the admin-channel PKI uses (pki/der.ts): node:crypto
 * signs but cannot build a CSR.
 */
import { KeyObject, createPublicKey, sign } from "node:crypto";
import {
  bitString,
  implicitPrimitive,
  octetString,
  oid,
  sequence,
  set,
  smallInteger,
  tlv,
  utf8String,
} from "../pki/der";

const OID_COMMON_NAME = "2.5.4.3";
const OID_EXTENSION_REQUEST = "1.2.840.113549.1.9.14";
const OID_SUBJECT_ALT_NAME = "2.5.29.17";
const OID_ECDSA_SHA256 = "1.2.840.10045.4.3.2";

/** DER of a CSR for `names` (the first is also the subject's common name), signed by `key`. */
export function certificationRequest(key: KeyObject, names: readonly string[]): Buffer {
  if (names.length === 0) throw new Error("a certificate request needs at least one name");
  const subject = sequence(set(sequence(oid(OID_COMMON_NAME), utf8String(names[0]!))));
  const spki = createPublicKey(key).export({ type: "spki", format: "der" });
  const san = sequence(
    oid(OID_SUBJECT_ALT_NAME),
    octetString(sequence(...names.map(n => implicitPrimitive(2, Buffer.from(n, "ascii"))))),
  );
  const attributes = tlv(0xa0, sequence(oid(OID_EXTENSION_REQUEST), set(sequence(san))));
  const info = sequence(smallInteger(0), subject, spki, attributes);
  const signature = sign("sha256", info, { key, dsaEncoding: "der" });
  return sequence(info, sequence(oid(OID_ECDSA_SHA256)), bitString(signature));
}
