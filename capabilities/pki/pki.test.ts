import { generateKeyPairSync, X509Certificate } from "node:crypto";
import { inspect } from "node:util";
import * as der from "./der";
import {
  createAuthority,
  generateKeyPair,
  issueClientCertificate,
  issueServerCertificate,
  loadAuthority,
  pemToBase64Der,
  proxyServerName,
  proxyServerNames,
  renewalDue,
} from "./pki";
import { Result } from "../result";

const must = <T>(r: Result<T>): T => {
  if (!r.ok) throw new Error(r.error);
  return r.value;
};
const start = new Date("2026-11-21T10:00:00Z");
const fixedRandom = (n: number) => Buffer.alloc(n, 0xab);
const ca = must(
  createAuthority({
    commonName: "test CA",
    keys: generateKeyPair(),
    notBefore: start,
    lifetimeDays: 3650,
    random: fixedRandom,
  }),
);
const caCert = new X509Certificate(ca.certificatePem);
const SERVER_AUTH = "1.3.6.1.5.5.7.3.1";
const CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";

describe("createAuthority", () => {
  it("makes a self-signed CA with the requested validity and serial", () => {
    expect(caCert.ca).toBe(true);
    expect(caCert.subject).toContain("CN=test CA");
    expect(caCert.issuer).toBe(caCert.subject);
    expect(caCert.verify(caCert.publicKey)).toBe(true);
    expect(new Date(caCert.validFrom).toISOString()).toBe(start.toISOString());
    expect(new Date(caCert.validTo).toISOString()).toBe(
      new Date(start.getTime() + 3650 * 86_400_000).toISOString(),
    );
    // serial from the injected source, top bit cleared so it stays positive
    expect(ca.serialHex).toBe("2B" + "AB".repeat(15));
    expect(caCert.serialNumber.toUpperCase()).toBe(ca.serialHex);
    expect(caCert.publicKey.asymmetricKeyDetails?.namedCurve).toBe("prime256v1");
  });

  it("refuses keys that are not ECDSA P-256 and non-positive lifetimes", () => {
    const rsa = generateKeyPairSync("rsa", { modulusLength: 1024 });
    expect(
      createAuthority({ commonName: "x", keys: rsa, notBefore: start, lifetimeDays: 1 }),
    ).toEqual({ ok: false, error: expect.stringContaining("P-256") });
    expect(
      createAuthority({
        commonName: "x",
        keys: generateKeyPair(),
        notBefore: start,
        lifetimeDays: 0,
      }).ok,
    ).toBe(false);
  });
});

describe("issueServerCertificate", () => {
  const issued = must(
    issueServerCertificate(ca, {
      commonName: "gw",
      dnsNames: proxyServerNames("gw-admin", "team-a"),
      ipAddresses: ["10.1.2.3", "fd00::7"],
      keys: generateKeyPair(),
      notBefore: start,
      lifetimeDays: 365,
    }),
  );
  const cert = new X509Certificate(issued.certificatePem);

  it("covers every pod's dial name of the Service, and nothing in other namespaces", () => {
    expect(cert.subjectAltName).toBe(
      "DNS:*.gw-admin.team-a.svc, DNS:*.gw-admin.team-a.svc.cluster.local, IP Address:10.1.2.3, IP Address:FD00:0:0:0:0:0:0:7",
    );
    expect(cert.checkHost(proxyServerName("gw-7d9f-abcde", "gw-admin", "team-a"))).toBe(
      "*.gw-admin.team-a.svc",
    );
    expect(cert.checkHost("gw-7d9f-abcde.gw-admin.team-b.svc")).toBeUndefined();
    expect(cert.checkIP("10.1.2.3")).toBe("10.1.2.3");
  });

  it("is a serverAuth leaf signed by the CA for the requested time", () => {
    expect(cert.ca).toBe(false);
    expect(cert.keyUsage).toEqual([SERVER_AUTH]);
    expect(cert.checkIssued(caCert)).toBe(true);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(new Date(cert.validTo).getTime() - new Date(cert.validFrom).getTime()).toBe(
      365 * 86_400_000,
    );
    expect(issued.notAfter.toISOString()).toBe(new Date(cert.validTo).toISOString());
  });

  it("refuses bad names, no names, and lifetimes beyond the CA's", () => {
    const base = { commonName: "gw", keys: generateKeyPair(), notBefore: start, lifetimeDays: 1 };
    expect(issueServerCertificate(ca, { ...base, dnsNames: [] }).ok).toBe(false);
    expect(issueServerCertificate(ca, { ...base, dnsNames: ["Bad_Name.svc"] })).toEqual({
      ok: false,
      error: expect.stringContaining("Bad_Name"),
    });
    expect(
      issueServerCertificate(ca, { ...base, dnsNames: ["a.svc"], ipAddresses: ["300.1.1.1"] }).ok,
    ).toBe(false);
    expect(
      issueServerCertificate(ca, { ...base, dnsNames: ["a.svc"], lifetimeDays: 4000 }),
    ).toEqual({ ok: false, error: expect.stringContaining("outlive") });
  });
});

describe("issueClientCertificate", () => {
  it("is a clientAuth-only leaf signed by the CA", () => {
    const issued = must(
      issueClientCertificate(ca, {
        commonName: "kengine-gateway-controller",
        keys: generateKeyPair(),
        notBefore: start,
        lifetimeDays: 30,
      }),
    );
    const cert = new X509Certificate(issued.certificatePem);
    expect(cert.keyUsage).toEqual([CLIENT_AUTH]);
    expect(cert.ca).toBe(false);
    expect(cert.subjectAltName).toBeUndefined();
    expect(cert.verify(caCert.publicKey)).toBe(true);
  });
});

describe("private keys", () => {
  it("never show up when an issued certificate is logged or serialised", () => {
    const keyPem = ca.privateKey.reveal();
    expect(keyPem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    const body = keyPem.split("\n")[1]!;
    for (const shown of [
      JSON.stringify(ca),
      inspect(ca, { depth: 10 }),
      `${ca.privateKey}`,
      String(ca.privateKey),
    ])
      expect(shown).not.toContain(body);
  });
});

describe("loadAuthority", () => {
  it("rebuilds a CA from its Secret's PEMs that signs certificates the original CA verifies", () => {
    const loaded = must(loadAuthority(ca.certificatePem, ca.privateKey.reveal()));
    expect(loaded.subjectDer.equals(ca.subjectDer)).toBe(true);
    expect(loaded.keyId.equals(ca.keyId)).toBe(true);
    const leaf = must(
      issueClientCertificate(loaded, {
        commonName: "c",
        keys: generateKeyPair(),
        notBefore: start,
        lifetimeDays: 1,
      }),
    );
    const cert = new X509Certificate(leaf.certificatePem);
    expect(cert.checkIssued(caCert)).toBe(true);
    expect(cert.verify(caCert.publicKey)).toBe(true);
  });

  it("refuses a key from another pair, a leaf certificate, and garbage without echoing it", () => {
    const other = generateKeyPair().privateKey.export({ type: "pkcs8", format: "pem" }) as string;
    expect(loadAuthority(ca.certificatePem, other)).toEqual({
      ok: false,
      error: expect.stringContaining("does not match"),
    });
    const leaf = must(
      issueClientCertificate(ca, {
        commonName: "c",
        keys: generateKeyPair(),
        notBefore: start,
        lifetimeDays: 1,
      }),
    );
    expect(loadAuthority(leaf.certificatePem, leaf.privateKey.reveal())).toEqual({
      ok: false,
      error: expect.stringContaining("CA:TRUE"),
    });
    const garbage = loadAuthority(
      "not a cert",
      "-----BEGIN PRIVATE KEY-----\nSECRETSTUFF\n-----END PRIVATE KEY-----\n",
    );
    expect(garbage.ok).toBe(false);
    if (!garbage.ok) expect(garbage.error).not.toContain("SECRETSTUFF");
  });
});

describe("pemToBase64Der", () => {
  it("gives the DER Caddy's trusted_ca_certs wants", () => {
    expect(must(pemToBase64Der(ca.certificatePem))).toBe(ca.certificateDer.toString("base64"));
    expect(pemToBase64Der("nope").ok).toBe(false);
  });
});

describe("der", () => {
  it("encodes RFC 5280 times as UTCTime through 2049 and GeneralizedTime from 2050", () => {
    expect(der.time(new Date("2049-12-31T23:59:59Z")).toString("latin1")).toBe(
      "\x17\x0d491231235959Z",
    );
    expect(der.time(new Date("2050-01-01T00:00:00Z")).toString("latin1")).toBe(
      "\x18\x0f20500101000000Z",
    );
  });
  it("encodes integers minimally and positive", () => {
    expect(der.unsignedInteger(Buffer.from([0x00, 0x00, 0x7f]))).toEqual(
      Buffer.from([0x02, 0x01, 0x7f]),
    );
    expect(der.unsignedInteger(Buffer.from([0x80]))).toEqual(Buffer.from([0x02, 0x02, 0x00, 0x80]));
    expect(der.oid("1.2.840.10045.4.3.2")).toEqual(Buffer.from("06082a8648ce3d040302", "hex"));
  });
  it("uses long-form lengths past 127 bytes", () => {
    expect(der.octetString(Buffer.alloc(300)).subarray(0, 4)).toEqual(
      Buffer.from([0x04, 0x82, 0x01, 0x2c]),
    );
  });
});

describe("renewalDue", () => {
  const cert = {
    notBefore: new Date("2026-01-01T00:00:00Z"),
    notAfter: new Date("2026-01-31T00:00:00Z"),
  };
  it("asks for renewal in the last third of the lifetime, and outside validity", () => {
    expect(renewalDue(cert, new Date("2026-01-15T00:00:00Z"))).toBe(false);
    expect(renewalDue(cert, new Date("2026-01-21T00:00:00Z"))).toBe(true);
    expect(renewalDue(cert, new Date("2025-12-31T00:00:00Z"))).toBe(true);
    expect(renewalDue(cert, new Date("2026-02-01T00:00:00Z"))).toBe(true);
  });
});
