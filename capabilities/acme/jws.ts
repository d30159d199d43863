/**
 * The signed requests of ACME (RFC 8555 §6.2): flattened JWS with ES256 (P-256), the account
 * key's JWK thumbprint (RFC 7638), key authorizations (§8.1) and External Account Binding
 * (§7.3.4, HS256). Pure: node:crypto signs, nothing here does I/O.
 */
import { KeyObject, createHash, createHmac, sign } from "node:crypto";

export const b64url = (data: Buffer | string): string =>
  (typeof data === "string" ? Buffer.from(data, "utf8") : data).toString("base64url");

/** The public JWK of a P-256 key, with only the members RFC 7638 orders (crv, kty, x, y). */
export interface EcJwk {
  readonly crv: "P-256";
  readonly kty: "EC";
  readonly x: string;
  readonly y: string;
}

export function publicJwk(key: KeyObject): EcJwk {
  const j = key.export({ format: "jwk" });
  if (j.kty !== "EC" || j.crv !== "P-256" || !j.x || !j.y)
    throw new Error("the ACME account key must be an ECDSA P-256 key");
  return { crv: "P-256", kty: "EC", x: j.x, y: j.y };
}

/** RFC 7638 thumbprint: SHA-256 of the required members in lexicographic order. */
export function thumbprint(jwk: EcJwk): string {
  const canonical = `{"crv":"${jwk.crv}","kty":"${jwk.kty}","x":"${jwk.x}","y":"${jwk.y}"}`;
  return b64url(createHash("sha256").update(canonical).digest());
}

/** The HTTP-01 response body: `<token>.<thumbprint>`. */
export const keyAuthorization = (token: string, jwk: EcJwk): string =>
  `${token}.${thumbprint(jwk)}`;

export interface FlattenedJws {
  readonly protected: string;
  readonly payload: string;
  readonly signature: string;
}

/** Who signs: a new account (its JWK in the header) or a known one (its URL as `kid`). */
export type Signer =
  | { readonly key: KeyObject; readonly jwk: EcJwk }
  | { readonly key: KeyObject; readonly kid: string };

/**
 * A request body. `payload` undefined is POST-as-GET (empty payload, §6.3).
 */
export function signRequest(
  signer: Signer,
  url: string,
  nonce: string,
  payload: unknown,
): FlattenedJws {
  const header = {
    alg: "ES256",
    ...("kid" in signer ? { kid: signer.kid } : { jwk: signer.jwk }),
    nonce,
    url,
  };
  const protectedB64 = b64url(JSON.stringify(header));
  const payloadB64 = payload === undefined ? "" : b64url(JSON.stringify(payload));
  const signature = sign("sha256", Buffer.from(`${protectedB64}.${payloadB64}`, "ascii"), {
    key: signer.key,
    dsaEncoding: "ieee-p1363",
  });
  return { protected: protectedB64, payload: payloadB64, signature: b64url(signature) };
}

/** External Account Binding: the account JWK signed with the CA-issued MAC key (HS256). */
export function externalAccountBinding(
  keyId: string,
  hmacKeyB64url: string,
  newAccountUrl: string,
  jwk: EcJwk,
): FlattenedJws {
  const protectedB64 = b64url(JSON.stringify({ alg: "HS256", kid: keyId, url: newAccountUrl }));
  const payloadB64 = b64url(JSON.stringify(jwk));
  const mac = createHmac("sha256", Buffer.from(hmacKeyB64url, "base64url"))
    .update(`${protectedB64}.${payloadB64}`)
    .digest();
  return { protected: protectedB64, payload: payloadB64, signature: b64url(mac) };
}
