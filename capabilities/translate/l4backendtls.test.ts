import fc from "fast-check";
import { L4CompiledBackend, l4BackendsIR, reencrypts } from "./l4backendtls";
import { BackendTLSDecision } from "./backendtls";

const endpoint = fc.record({ address: fc.ipV4(), port: fc.integer({ min: 1, max: 65535 }) });
const decision: fc.Arbitrary<BackendTLSDecision> = fc.oneof(
  fc.record({
    policy: fc.constant("default/p"),
    ok: fc.constant(true as const),
    tls: fc.record(
      {
        serverName: fc.domain(),
        caCertificates: fc.array(fc.base64String({ minLength: 4, maxLength: 12 }), {
          minLength: 1,
          maxLength: 2,
        }),
        subjectAltNames: fc.record({
          dns: fc.array(fc.domain(), { maxLength: 2 }),
          uri: fc.constant([]),
        }),
      },
      { requiredKeys: ["serverName"] },
    ),
  }),
  fc.record({
    policy: fc.constant("default/p"),
    ok: fc.constant(false as const),
    message: fc.string(),
  }),
);
const backend: fc.Arbitrary<L4CompiledBackend> = fc.record(
  {
    id: fc.string({ minLength: 1 }),
    weight: fc.integer({ min: 1, max: 10 }),
    endpoints: fc.array(endpoint, { maxLength: 3 }),
    backendTLS: decision,
  },
  { requiredKeys: ["id", "weight", "endpoints"] },
);

describe("BackendTLSPolicy on layer-4 backends", () => {
  it("re-encrypts only behind Terminate listeners, with the policy's name and CAs; refuses what caddy-l4 cannot verify", () => {
    fc.assert(
      fc.property(fc.array(backend, { maxLength: 4 }), fc.boolean(), (backends, reencrypt) => {
        const out = l4BackendsIR(backends, reencrypt);
        expect(out).toHaveLength(backends.length);
        out.forEach((b, i) => {
          const d = backends[i].backendTLS;
          expect(b).not.toHaveProperty("backendTLS");
          expect(b.id).toBe(backends[i].id);
          expect(b.weight).toBe(backends[i].weight);
          if (!reencrypt || !d) {
            expect(b.tls).toBeUndefined();
            expect(b.endpoints).toEqual(backends[i].endpoints);
          } else if (!d.ok || d.tls.subjectAltNames) {
            // Never a weaker check: no connection at all.
            expect(b.endpoints).toEqual([]);
          } else {
            expect(b.endpoints).toEqual(backends[i].endpoints);
            expect(b.tls).toEqual({
              serverName: d.tls.serverName,
              ...(d.tls.caCertificates && { caCertificates: d.tls.caCertificates }),
            });
          }
        });
      }),
    );
  });

  it("a TLS listener re-encrypts in mode Terminate (the default), never Passthrough; TCP never", () => {
    expect(reencrypts("TLS", undefined)).toBe(true);
    expect(reencrypts("TLS", "Terminate")).toBe(true);
    expect(reencrypts("TLS", "Passthrough")).toBe(false);
    expect(reencrypts("TCP", undefined)).toBe(false);
  });
});
