/** Shared by the push-engine unit tests: a test CA and the management spec of a proxy. */
import { ManagementSpec } from "../caddy/management";
import { createAuthority, generateKeyPair } from "../pki/pki";
import { Result } from "../result";

export const must = <T, E>(r: Result<T, E>): T => {
  if (!r.ok) throw new Error(JSON.stringify(r.error));
  return r.value;
};

export const testCa = must(
  createAuthority({
    commonName: "test CA",
    keys: generateKeyPair(),
    notBefore: new Date("2026-11-21T00:00:00Z"),
    lifetimeDays: 10,
  }),
);

export const testSpec: ManagementSpec = {
  listenAddress: "{env.KENGINE_POD_IP}:9443",
  adminAddress: "unix//tmp/kengine-admin.sock",
  serverCertTag: "kengine-management",
  clientCaPem: testCa.certificatePem,
  serverCertificate: { kind: "files", certificateFile: "/tls/tls.crt", keyFile: "/tls/tls.key" },
  readinessAddress: ":8081",
};
