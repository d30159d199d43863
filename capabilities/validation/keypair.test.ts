import { generateKeyPairSync, KeyObject } from "node:crypto";
import fc from "fast-check";
import { createAuthority, generateKeyPair } from "../pki/pki";
import { checkKeyPair } from "./keypair";

const start = new Date("2026-01-01T00:00:00Z");

/** A self-signed P-256 certificate and its key, as PEM. */
function selfSigned(cn: string): { crt: string; key: string } {
  const keys = generateKeyPair();
  const r = createAuthority({ commonName: cn, keys, notBefore: start, lifetimeDays: 30 });
  if (!r.ok) throw new Error(r.error);
  return { crt: r.value.certificatePem, key: r.value.privateKey.reveal() };
}

const pem = (k: KeyObject): string => k.export({ format: "pem", type: "pkcs8" }).toString();

const pairs = Array.from({ length: 4 }, (_, i) => selfSigned(`pair-${i}`));

describe("checkKeyPair (a TLS Secret's tls.crt and tls.key, as the proxy loads them)", () => {
  it("accepts a certificate with its own key, also with a chain after it", () => {
    expect(checkKeyPair(pairs[0].crt, pairs[0].key)).toEqual({ ok: true });
    expect(checkKeyPair(pairs[0].crt + pairs[1].crt, pairs[0].key)).toEqual({ ok: true });
  });

  it("property: a pair is accepted exactly when the key is the (first) certificate's", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: pairs.length - 1 }),
        fc.integer({ min: 0, max: pairs.length - 1 }),
        (c, k) => {
          const r = checkKeyPair(pairs[c].crt, pairs[k].key);
          expect(r.ok).toBe(c === k);
          if (!r.ok) expect(r.error).toMatch(/does not belong to the certificate/);
        },
      ),
    );
  });

  it("refuses the key of the second certificate of a chain (the leaf is the first)", () => {
    const r = checkKeyPair(pairs[0].crt + pairs[1].crt, pairs[1].key);
    expect(r).toEqual({ ok: false, error: expect.stringMatching(/does not belong/) });
  });

  it("refuses an RSA key for an ECDSA certificate", () => {
    const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey;
    expect(checkKeyPair(pairs[0].crt, pem(rsa))).toEqual({
      ok: false,
      error: expect.stringMatching(/does not belong/),
    });
  });

  it("refuses key types the proxy (Go's crypto/x509) cannot load", () => {
    const k1 = generateKeyPairSync("ec", { namedCurve: "secp256k1" }).privateKey;
    const r = checkKeyPair(pairs[0].crt, pem(k1));
    expect(r).toEqual({ ok: false, error: expect.stringMatching(/ec \(secp256k1\) key/) });
    const x = generateKeyPairSync("x25519").privateKey;
    expect(checkKeyPair(pairs[0].crt, pem(x))).toEqual({
      ok: false,
      error: expect.stringMatching(/x25519 key/),
    });
  });

  it("refuses what is not PEM, swapped fields, broken blocks and encrypted keys", () => {
    const { crt, key } = pairs[0];
    const cases: [string, string, RegExp][] = [
      ["", key, /tls.crt holds no PEM CERTIFICATE block/],
      ["not a certificate", key, /tls.crt holds no PEM CERTIFICATE block/],
      [key, crt, /tls.crt holds no PEM CERTIFICATE block/],
      [crt, crt, /tls.key holds no PEM PRIVATE KEY block/],
      [crt, "", /tls.key holds no PEM PRIVATE KEY block/],
      [
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        key,
        /first certificate of tls.crt cannot be parsed/,
      ],
      [
        crt,
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        /tls.key cannot be parsed/,
      ],
    ];
    for (const [c, k, error] of cases)
      expect(checkKeyPair(c, k)).toEqual({ ok: false, error: expect.stringMatching(error) });
    const encrypted = generateKeyPair()
      .privateKey.export({ format: "pem", type: "pkcs8", cipher: "aes-256-cbc", passphrase: "x" })
      .toString();
    expect(checkKeyPair(crt, encrypted)).toEqual({
      ok: false,
      error: expect.stringMatching(/tls.key is encrypted/),
    });
  });
});
