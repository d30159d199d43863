/**
 * The certification request, checked by OpenSSL (`openssl req -verify`): its self-signature
 * verifies, its subject is the first name and its subjectAltName lists every name.
 */
import fc from "fast-check";
import { spawnSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { certificationRequest } from "./csr";

const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?$/);
const dnsName = fc
  .array(label, { minLength: 2, maxLength: 4 })
  .map(ls => ls.join("."))
  .filter(n => n.length <= 200);

/** What `openssl req -verify` prints (stdout and stderr). */
const openssl = (file: string, ...more: string[]): string => {
  const r = spawnSync(
    "openssl",
    ["req", "-inform", "DER", "-in", file, "-verify", "-noout", ...more],
    {
      encoding: "utf8",
    },
  );
  return `${r.stdout}${r.stderr}`;
};

describe("PKCS#10 certification request", () => {
  const dir = mkdtempSync(join(tmpdir(), "kg-csr-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("verifies with openssl and names every DNS name", () => {
    fc.assert(
      fc.property(fc.uniqueArray(dnsName, { minLength: 1, maxLength: 5 }), names => {
        const key = generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey;
        const file = join(dir, "req.der");
        writeFileSync(file, certificationRequest(key, names));
        const out = openssl(file, "-text");
        expect(out).toContain("self-signature verify OK");
        expect(out).toMatch(new RegExp(`Subject: CN ?= ?${names[0]!.replace(/\./g, "\\.")}\\n`));
        const san = /X509v3 Subject Alternative Name:\s*\n\s*(.*)\n/.exec(out)?.[1];
        expect(san?.split(", ")).toEqual(names.map(n => `DNS:${n}`));
      }),
      { numRuns: 15 },
    );
  });

  it("is refused by openssl when a byte of the request is changed", () => {
    const key = generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey;
    const der = certificationRequest(key, ["shop.example.com"]);
    const i = der.indexOf(Buffer.from("shop.example.com"));
    der[i] = "x".charCodeAt(0);
    const file = join(dir, "bad.der");
    writeFileSync(file, der);
    // OpenSSL 3.0 exits 0 either way: its verdict is what it prints
    const out = openssl(file);
    expect(out).toContain("self-signature verify failure");
    expect(out).not.toContain("verify OK");
  });

  it("needs at least one name", () => {
    const key = generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey;
    expect(() => certificationRequest(key, [])).toThrow(/at least one name/);
  });
});
