/**
 * The signed requests, checked by an independent JOSE implementation (jose, a dependency of
 * Pepr's Kubernetes client): ES256 signatures verify with the account's public key, headers
 * carry exactly what RFC 8555 §6.2 asks, thumbprints equal RFC 7638's, EAB verifies as HS256.
 */
import fc from "fast-check";
import { createPublicKey, generateKeyPairSync, randomBytes } from "node:crypto";
import { calculateJwkThumbprint, flattenedVerify } from "jose";
import {
  externalAccountBinding,
  keyAuthorization,
  publicJwk,
  signRequest,
  thumbprint,
} from "./jws";

const RUNS = Number(process.env.KG_PROPERTY_RUNS ?? 50);
const key = generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey;
const jwk = publicJwk(key);
const header = (p: string): Record<string, unknown> =>
  JSON.parse(Buffer.from(p, "base64url").toString("utf8")) as Record<string, unknown>;

describe("ACME JWS (ES256)", () => {
  it("signs any payload so that jose verifies it with the account's public key", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.option(fc.jsonValue(), { nil: undefined }),
        fc.webUrl(),
        fc.base64String({ minLength: 4, maxLength: 40 }),
        fc.boolean(),
        async (payload, url, nonce, known) => {
          const jws = signRequest(
            known ? { key, kid: "https://ca.example/acct/1" } : { key, jwk },
            url,
            nonce,
            payload,
          );
          const verified = await flattenedVerify(jws, createPublicKey(key));
          const h = verified.protectedHeader as Record<string, unknown>;
          expect(h["alg"]).toBe("ES256");
          expect(h["url"]).toBe(url);
          expect(h["nonce"]).toBe(nonce);
          // exactly one of jwk (new account) and kid (known account), §6.2
          expect("kid" in h).toBe(known);
          expect("jwk" in h).toBe(!known);
          if (payload === undefined) expect(jws.payload).toBe("");
          else
            expect(JSON.parse(Buffer.from(verified.payload).toString("utf8"))).toEqual(
              JSON.parse(JSON.stringify(payload)),
            );
        },
      ),
      { numRuns: RUNS },
    );
  });

  it("fails verification with another key", async () => {
    const other = generateKeyPairSync("ec", { namedCurve: "prime256v1" }).publicKey;
    const jws = signRequest({ key, jwk }, "https://ca.example/new-acct", "n0nce", {});
    await expect(flattenedVerify(jws, other)).rejects.toThrow();
  });

  it("thumbprints as RFC 7638 does, and builds key authorizations from them", async () => {
    for (let i = 0; i < 10; i++) {
      const k = generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey;
      const j = publicJwk(k);
      expect(thumbprint(j)).toBe(await calculateJwkThumbprint(j, "sha256"));
      expect(keyAuthorization("tok-en_1", j)).toBe(`tok-en_1.${thumbprint(j)}`);
    }
  });

  it("refuses a key that is not P-256", () => {
    const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 }).privateKey;
    expect(() => publicJwk(rsa)).toThrow(/P-256/);
  });

  it("binds the account key to an external account with HS256 over the JWK (§7.3.4)", async () => {
    const mac = randomBytes(32);
    const eab = externalAccountBinding("kid-1", mac.toString("base64url"), "https://ca/new", jwk);
    const verified = await flattenedVerify(eab, new Uint8Array(mac));
    expect(verified.protectedHeader).toEqual({ alg: "HS256", kid: "kid-1", url: "https://ca/new" });
    expect(JSON.parse(Buffer.from(verified.payload).toString("utf8"))).toEqual(jwk);
    expect(header(eab.protected)["jwk"]).toBeUndefined();
    await expect(flattenedVerify(eab, new Uint8Array(randomBytes(32)))).rejects.toThrow();
  });
});
