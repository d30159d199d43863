/**
 * Whether a certificate and private key (a TLS Secret's `tls.crt` and `tls.key`) can be served
 * together, decided as the proxy decides it: Caddy loads every `load_pem` pair with Go's
 * `tls.X509KeyPair` and refuses the whole config when one pair fails, so a pair is checked
 * here first and only its own listener pays for it. Go reads the first `CERTIFICATE` block of
 * the certificate PEM as the leaf (other blocks are skipped) and the first `… PRIVATE KEY`
 * block of the key PEM (PKCS #1, PKCS #8 or SEC 1; RSA, ECDSA on P-224/256/384/521, Ed25519),
 * and requires the key to be the leaf's. Pure: node:crypto parses, no clock (a certificate
 * that has expired is served, as the proxy would; one whose validity ends before it starts is
 * malformed and refused).
 */
import { KeyObject, X509Certificate, createPrivateKey } from "node:crypto";

export type KeyPairResult = { readonly ok: true } | { readonly ok: false; readonly error: string };

const CERT_BLOCK = /-----BEGIN CERTIFICATE-----\r?\n[\s\S]*?-----END CERTIFICATE-----/;
const KEY_BLOCK = /-----BEGIN ([A-Z0-9 ]*PRIVATE KEY)-----\r?\n[\s\S]*?-----END \1-----/;
/** Curves Go's crypto/x509 parses (node:crypto's names). */
const GO_CURVES = new Set(["secp224r1", "prime256v1", "secp384r1", "secp521r1"]);

const fail = (error: string): KeyPairResult => ({ ok: false, error });

/** Checks a PEM certificate (chain) and PEM private key; the error names the field and why. */
export function checkKeyPair(certificatePem: string, keyPem: string): KeyPairResult {
  const certBlock = CERT_BLOCK.exec(certificatePem)?.[0];
  if (!certBlock) return fail("tls.crt holds no PEM CERTIFICATE block");
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certBlock);
  } catch (e) {
    return fail(`the first certificate of tls.crt cannot be parsed (${reason(e)})`);
  }
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  if (!(from <= to))
    return fail(
      `the certificate's validity period is malformed (notBefore ${cert.validFrom}, notAfter ${cert.validTo})`,
    );
  const keyBlock = KEY_BLOCK.exec(keyPem);
  if (!keyBlock) return fail("tls.key holds no PEM PRIVATE KEY block");
  if (keyBlock[1] === "ENCRYPTED PRIVATE KEY")
    return fail("tls.key is encrypted: the proxy needs the key unencrypted");
  let key: KeyObject;
  try {
    key = createPrivateKey(keyBlock[0]);
  } catch (e) {
    return fail(`tls.key cannot be parsed (${reason(e)})`);
  }
  const type = key.asymmetricKeyType;
  const curve = key.asymmetricKeyDetails?.namedCurve;
  const usable =
    type === "rsa" ||
    type === "ed25519" ||
    (type === "ec" && curve !== undefined && GO_CURVES.has(curve));
  if (!usable)
    return fail(
      `tls.key is a ${type ?? "unknown"}${curve ? ` (${curve})` : ""} key; the proxy serves RSA, ECDSA (P-224, P-256, P-384, P-521) and Ed25519 keys`,
    );
  let matches = false;
  try {
    matches = cert.checkPrivateKey(key);
  } catch {
    matches = false;
  }
  if (!matches)
    return fail(
      "the private key (tls.key) does not belong to the certificate (the first one in tls.crt)",
    );
  return { ok: true };
}

const reason = (e: unknown): string =>
  (e instanceof Error ? e.message : String(e)).split("\n")[0].slice(0, 120);
