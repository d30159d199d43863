/**
 * Certificates for the proxy admin channel (docs/operations.md §7): one controller CA, a serving
 * certificate per proxy Service (every pod of a Gateway presents it), and the controller's
 * client certificate. Keys are ECDSA P-256; certificates are X.509 v3 signed with
 * ecdsa-with-SHA256, built with ./der and signed by node:crypto.
 *
 * Pure given their inputs: keys, the clock (`notBefore`) and the serial-number source are
 * arguments. (ECDSA signatures themselves are randomised by OpenSSL, so bytes differ run to
 * run; everything a test asserts on — names, dates, usages, issuer — does not.) The one module
 * state is a small memo of a certificate PEM's DER (the last few), which changes the cost only.
 */
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  KeyObject,
  randomBytes,
  sign,
  X509Certificate,
} from "node:crypto";
import { isIP } from "node:net";
import * as der from "./der";
import { err, ok, Result } from "../result";
import { SecretPem } from "./secret";

/** The controller's client identity and the CA it trusts for proxies' serving certificates. */
export interface ClientCredentials {
  readonly caPem: string;
  readonly certificatePem: string;
  readonly privateKey: SecretPem;
}

export interface KeyPair {
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
}

/** Returns `size` random bytes; injected so tests can fix serial numbers. */
export type RandomBytes = (size: number) => Buffer;

/** A certificate and its private key, ready to be written to a `kubernetes.io/tls` Secret. */
export interface Issued {
  readonly certificatePem: string;
  readonly certificateDer: Buffer;
  readonly privateKey: SecretPem;
  readonly serialHex: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
}

/** The controller CA: what it needs to sign, plus its own certificate. */
export interface Authority extends Issued {
  readonly signingKey: KeyObject;
  readonly subjectDer: Buffer;
  readonly keyId: Buffer;
}

export interface Validity {
  /** Start of validity; callers pass their clock's now (backdated a little for skew). */
  readonly notBefore: Date;
  readonly lifetimeDays: number;
}

export const CA_LIFETIME_DAYS = 3650;
export const LEAF_LIFETIME_DAYS = 365;
/** Backdating that tolerates clock skew between controller and proxy nodes. */
export const CLOCK_SKEW_MS = 5 * 60 * 1000;

const OID = {
  ecPublicKey: "1.2.840.10045.2.1",
  ecdsaWithSha256: "1.2.840.10045.4.3.2",
  commonName: "2.5.4.3",
  organization: "2.5.4.10",
  subjectKeyIdentifier: "2.5.29.14",
  keyUsage: "2.5.29.15",
  subjectAltName: "2.5.29.17",
  basicConstraints: "2.5.29.19",
  authorityKeyIdentifier: "2.5.29.35",
  extKeyUsage: "2.5.29.37",
  serverAuth: "1.3.6.1.5.5.7.3.1",
  clientAuth: "1.3.6.1.5.5.7.3.2",
} as const;

const ORGANIZATION = "kengine-gateway";

/** A fresh ECDSA P-256 key pair. */
export function generateKeyPair(): KeyPair {
  return generateKeyPairSync("ec", { namedCurve: "prime256v1" });
}

/** The name the controller dials a proxy pod with (SNI and Host; docs/operations.md §7). */
export const proxyServerName = (podName: string, service: string, namespace: string): string =>
  `${podName}.${service}.${namespace}.svc`;

/** SANs of a proxy Service's serving certificate: every `proxyServerName` of its pods. */
export const proxyServerNames = (service: string, namespace: string): readonly string[] => [
  `*.${service}.${namespace}.svc`,
  `*.${service}.${namespace}.svc.cluster.local`,
];

const DNS_NAME =
  /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

const name = (commonName: string): Buffer =>
  der.sequence(
    der.set(der.sequence(der.oid(OID.organization), der.utf8String(ORGANIZATION))),
    der.set(der.sequence(der.oid(OID.commonName), der.utf8String(commonName))),
  );

const extension = (id: string, critical: boolean, value: Buffer): Buffer =>
  critical
    ? der.sequence(der.oid(id), der.boolean(true), der.octetString(value))
    : der.sequence(der.oid(id), der.octetString(value));

const keyId = (publicKey: KeyObject): Buffer =>
  createHash("sha1")
    .update(publicKey.export({ type: "spki", format: "der" }))
    .digest();

const ipBytes = (ip: string): Buffer => {
  if (isIP(ip) === 4) return Buffer.from(ip.split(".").map(Number));
  const [head = "", tail] = ip.split("::");
  const groups = (part: string): string[] => (part === "" ? [] : part.split(":"));
  const all =
    tail === undefined
      ? groups(head)
      : [
          ...groups(head),
          ...Array<string>(8 - groups(head).length - groups(tail).length).fill("0"),
          ...groups(tail),
        ];
  return Buffer.concat(all.map(g => Buffer.from([parseInt(g, 16) >> 8, parseInt(g, 16) & 0xff])));
};

type Usage =
  | { readonly kind: "ca" }
  | {
      readonly kind: "server";
      readonly dnsNames: readonly string[];
      readonly ipAddresses: readonly string[];
    }
  | { readonly kind: "client" };

const extensions = (usage: Usage, subjectKey: KeyObject, issuerKeyId: Buffer): Buffer[] => {
  const common = [
    extension(OID.subjectKeyIdentifier, false, der.octetString(keyId(subjectKey))),
    extension(
      OID.authorityKeyIdentifier,
      false,
      der.sequence(der.implicitPrimitive(0, issuerKeyId)),
    ),
  ];
  switch (usage.kind) {
    case "ca":
      return [
        // digitalSignature(0) | keyCertSign(5) | cRLSign(6) → 1000 0110, one unused bit
        extension(OID.keyUsage, true, der.bitString(Buffer.from([0x86]), 1)),
        extension(OID.basicConstraints, true, der.sequence(der.boolean(true), der.smallInteger(0))),
        ...common,
      ];
    case "server":
      return [
        extension(OID.keyUsage, true, der.bitString(Buffer.from([0x80]), 7)),
        extension(OID.extKeyUsage, false, der.sequence(der.oid(OID.serverAuth))),
        extension(OID.basicConstraints, true, der.sequence()),
        extension(
          OID.subjectAltName,
          false,
          der.sequence(
            ...usage.dnsNames.map(n => der.implicitPrimitive(2, Buffer.from(n, "ascii"))),
            ...usage.ipAddresses.map(ip => der.implicitPrimitive(7, ipBytes(ip))),
          ),
        ),
        ...common,
      ];
    case "client":
      return [
        extension(OID.keyUsage, true, der.bitString(Buffer.from([0x80]), 7)),
        extension(OID.extKeyUsage, false, der.sequence(der.oid(OID.clientAuth))),
        extension(OID.basicConstraints, true, der.sequence()),
        ...common,
      ];
  }
};

/** 16 random bytes as a positive, minimally encoded serial (RFC 5280 §4.1.2.2: ≤ 20 octets). */
const serial = (random: RandomBytes): Buffer => {
  const bytes = Buffer.from(random(16));
  bytes[0] = (bytes[0]! & 0x7f) | 0x01;
  return bytes;
};

const PEM_LINE = /.{1,64}/g;
const toPem = (label: string, body: Buffer): string =>
  `-----BEGIN ${label}-----\n${body.toString("base64").match(PEM_LINE)!.join("\n")}\n-----END ${label}-----\n`;

interface SignInput {
  readonly subjectCommonName: string;
  readonly subjectKey: KeyPair;
  readonly issuer:
    | { readonly subjectDer: Buffer; readonly signingKey: KeyObject; readonly keyId: Buffer }
    | "self";
  readonly validity: Validity;
  readonly usage: Usage;
  readonly random: RandomBytes;
}

function checkKey(keys: KeyPair): string | undefined {
  const details = keys.publicKey.asymmetricKeyDetails;
  if (keys.publicKey.asymmetricKeyType !== "ec" || details?.namedCurve !== "prime256v1")
    return "keys must be ECDSA P-256 (prime256v1)";
  if (keys.privateKey.type !== "private") return "privateKey is not a private key";
  return undefined;
}

function signCertificate(input: SignInput): Result<Issued> {
  const problem = checkKey(input.subjectKey);
  if (problem) return err(problem);
  if (!(input.validity.lifetimeDays > 0)) return err("lifetimeDays must be positive");
  if (Number.isNaN(input.validity.notBefore.getTime())) return err("notBefore is not a valid date");
  const notBefore = new Date(Math.floor(input.validity.notBefore.getTime() / 1000) * 1000);
  const notAfter = new Date(notBefore.getTime() + input.validity.lifetimeDays * 86_400_000);
  const subjectDer = name(input.subjectCommonName);
  const ownId = keyId(input.subjectKey.publicKey);
  const issuer =
    input.issuer === "self"
      ? { subjectDer, signingKey: input.subjectKey.privateKey, keyId: ownId }
      : input.issuer;
  const serialBytes = serial(input.random);
  const algorithm = der.sequence(der.oid(OID.ecdsaWithSha256));
  const tbs = der.sequence(
    der.explicit(0, der.smallInteger(2)),
    der.unsignedInteger(serialBytes),
    algorithm,
    issuer.subjectDer,
    der.sequence(der.time(notBefore), der.time(notAfter)),
    subjectDer,
    input.subjectKey.publicKey.export({ type: "spki", format: "der" }),
    der.explicit(
      3,
      der.sequence(...extensions(input.usage, input.subjectKey.publicKey, issuer.keyId)),
    ),
  );
  const signature = sign("sha256", tbs, { key: issuer.signingKey, dsaEncoding: "der" });
  const certificateDer = der.sequence(tbs, algorithm, der.bitString(signature));
  return ok({
    certificatePem: toPem("CERTIFICATE", certificateDer),
    certificateDer,
    privateKey: new SecretPem(
      input.subjectKey.privateKey.export({ type: "pkcs8", format: "pem" }) as string,
    ),
    serialHex: serialBytes.toString("hex").toUpperCase(),
    notBefore,
    notAfter,
  });
}

export interface AuthorityInput extends Validity {
  readonly commonName: string;
  readonly keys: KeyPair;
  readonly random?: RandomBytes;
}

/** A self-signed controller CA (path length 0: it signs leaves only). */
export function createAuthority(input: AuthorityInput): Result<Authority> {
  const issued = signCertificate({
    subjectCommonName: input.commonName,
    subjectKey: input.keys,
    issuer: "self",
    validity: input,
    usage: { kind: "ca" },
    random: input.random ?? randomBytes,
  });
  if (!issued.ok) return issued;
  return ok({
    ...issued.value,
    signingKey: input.keys.privateKey,
    subjectDer: name(input.commonName),
    keyId: keyId(input.keys.publicKey),
  });
}

/** Rebuilds an Authority from its stored PEMs (the CA Secret), checking that they belong together. */
export function loadAuthority(certificatePem: string, privateKeyPem: string): Result<Authority> {
  let cert: X509Certificate;
  let privateKey: KeyObject;
  try {
    cert = new X509Certificate(certificatePem);
    privateKey = createPrivateKey(privateKeyPem);
  } catch (e) {
    // the parser's message can quote input; say only which part failed
    return err(`CA certificate or key does not parse (${e instanceof Error ? e.name : "error"})`);
  }
  const publicKey = createPublicKey(privateKey);
  const problem = checkKey({ privateKey, publicKey });
  if (problem) return err(`CA: ${problem}`);
  if (!cert.ca) return err("CA certificate lacks basicConstraints CA:TRUE");
  if (!cert.checkPrivateKey(privateKey)) return err("CA key does not match the CA certificate");
  const certificateDer = cert.raw;
  return ok({
    certificatePem: toPem("CERTIFICATE", certificateDer),
    certificateDer,
    privateKey: new SecretPem(privateKeyPem),
    serialHex: cert.serialNumber.toUpperCase(),
    notBefore: new Date(cert.validFrom),
    notAfter: new Date(cert.validTo),
    signingKey: privateKey,
    subjectDer: subjectOf(certificateDer),
    keyId: keyId(publicKey),
  });
}

/** Length of the TLV header at `at` (tag byte plus length octets). */
const headerLength = (buf: Buffer, at: number): number => {
  const first = buf[at + 1]!;
  return first & 0x80 ? 2 + (first & 0x7f) : 2;
};

/** End offset of the TLV at `at`. */
const tlvEnd = (buf: Buffer, at: number): number => {
  const first = buf[at + 1]!;
  let len = first;
  if (first & 0x80) {
    len = 0;
    for (let i = 0; i < (first & 0x7f); i++) len = len * 256 + buf[at + 2 + i]!;
  }
  return at + headerLength(buf, at) + len;
};

/** The subject Name TLV of a DER certificate: tbsCertificate's 6th field (version, serial, signature, issuer, validity, subject). */
function subjectOf(certificateDer: Buffer): Buffer {
  const tbsAt = headerLength(certificateDer, 0);
  let at = tbsAt + headerLength(certificateDer, tbsAt);
  for (let field = 0; field < 5; field++) at = tlvEnd(certificateDer, at);
  return certificateDer.subarray(at, tlvEnd(certificateDer, at));
}

export interface LeafInput extends Validity {
  readonly commonName: string;
  readonly keys: KeyPair;
  readonly random?: RandomBytes;
}

export interface ServerInput extends LeafInput {
  /** DNS SANs; for a proxy Service, `proxyServerNames(service, namespace)`. */
  readonly dnsNames: readonly string[];
  readonly ipAddresses?: readonly string[];
}

function withinAuthority(ca: Authority, validity: Validity): string | undefined {
  const end = validity.notBefore.getTime() + validity.lifetimeDays * 86_400_000;
  if (end > ca.notAfter.getTime())
    return `certificate would outlive its CA (CA expires ${ca.notAfter.toISOString()})`;
  return undefined;
}

/** A proxy's serving certificate for the management listener (serverAuth only). */
export function issueServerCertificate(ca: Authority, input: ServerInput): Result<Issued> {
  if (input.dnsNames.length === 0) return err("a serving certificate needs at least one DNS name");
  const bad = input.dnsNames.find(n => n.length > 253 || !DNS_NAME.test(n));
  if (bad !== undefined)
    return err(`not a valid DNS name for a certificate: ${JSON.stringify(bad)}`);
  const badIp = (input.ipAddresses ?? []).find(ip => isIP(ip) === 0);
  if (badIp !== undefined) return err(`not an IP address: ${JSON.stringify(badIp)}`);
  const outlives = withinAuthority(ca, input);
  if (outlives) return err(outlives);
  return signCertificate({
    subjectCommonName: input.commonName,
    subjectKey: input.keys,
    issuer: ca,
    validity: input,
    usage: { kind: "server", dnsNames: input.dnsNames, ipAddresses: input.ipAddresses ?? [] },
    random: input.random ?? randomBytes,
  });
}

/** The controller's client certificate (clientAuth only: it cannot serve as a proxy). */
export function issueClientCertificate(ca: Authority, input: LeafInput): Result<Issued> {
  const outlives = withinAuthority(ca, input);
  if (outlives) return err(outlives);
  return signCertificate({
    subjectCommonName: input.commonName,
    subjectKey: input.keys,
    issuer: ca,
    validity: input,
    usage: { kind: "client" },
    random: input.random ?? randomBytes,
  });
}

/**
 * Whether a certificate should be replaced: less than a third of its lifetime left (or not
 * yet valid / expired). Rotation then has weeks of slack for a one-year leaf.
 */
export function renewalDue(cert: Pick<Issued, "notBefore" | "notAfter">, now: Date): boolean {
  const start = cert.notBefore.getTime();
  const end = cert.notAfter.getTime();
  const t = now.getTime();
  return t < start || t >= end - (end - start) / 3;
}

/**
 * Base64 DER of a PEM certificate, the form Caddy's `trusted_ca_certs` takes. The last few
 * answers are kept: every seal asks for the controller's CA (parsing it was ~10 % of a
 * 10-Gateway seal), and CAs change rarely.
 */
export function pemToBase64Der(certificatePem: string): Result<string> {
  const known = derOfPem.get(certificatePem);
  if (known) return known;
  let r: Result<string>;
  try {
    r = ok(new X509Certificate(certificatePem).raw.toString("base64"));
  } catch {
    r = err("not a PEM certificate");
  }
  if (derOfPem.size >= DER_OF_PEM_KEPT) derOfPem.delete(derOfPem.keys().next().value!);
  derOfPem.set(certificatePem, r);
  return r;
}

const DER_OF_PEM_KEPT = 8;
const derOfPem = new Map<string, Result<string>>();
