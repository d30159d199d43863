import fc from "fast-check";
import { gatewayProblems } from "./gateway";
import { listenerFilterProblems } from "./listenerfilters";

const externalAuth = (protocol: string) => ({
  type: "ExternalAuth",
  externalAuth: { protocol, backendRef: { name: "auth", port: 8080 } },
});

describe("listener filters (GatewayListenerFilters)", () => {
  it("accepts ExternalAuth over HTTP on HTTP and HTTPS listeners, in any number", () => {
    fc.assert(
      fc.property(fc.constantFrom("HTTP", "HTTPS"), fc.integer({ min: 0, max: 16 }), (p, n) => {
        const requests = Array.from({ length: n }, () => externalAuth("HTTP"));
        expect(listenerFilterProblems("spec.listeners[0]", p, { requests })).toEqual([]);
      }),
    );
  });

  it("refuses gRPC ext_authz and ExtensionRef with the field and the reason", () => {
    const problems = gatewayProblems({
      spec: {
        listeners: [
          {
            name: "a",
            port: 80,
            protocol: "HTTP",
            filters: {
              requests: [
                externalAuth("HTTP"),
                externalAuth("GRPC"),
                {
                  type: "ExtensionRef",
                  extensionRef: { group: "x", kind: "Y", name: "z" },
                } as never,
              ],
            },
          },
        ],
      },
    });
    expect(problems.map(p => [p.path, p.value])).toEqual([
      ["spec.listeners[0].filters.requests[1].externalAuth.protocol", "GRPC"],
      ["spec.listeners[0].filters.requests[2].type", "ExtensionRef"],
    ]);
    expect(problems[0].message).toMatch(/over HTTP only/);
    expect(problems[1].message).toMatch(/no pre-routing extensions/);
  });

  it("refuses filters on a listener that is not HTTP or HTTPS, whatever they are", () => {
    fc.assert(
      fc.property(fc.constantFrom("TLS", "TCP", "UDP", "x.io/Other"), p => {
        const problems = listenerFilterProblems("at", p, { requests: [externalAuth("HTTP")] });
        expect(problems).toHaveLength(1);
        expect(problems[0].path).toBe("at.filters");
      }),
    );
  });

  it("never throws on values of the wrong shape", () => {
    fc.assert(
      fc.property(fc.anything(), fc.anything(), (protocol, filters) => {
        expect(() =>
          listenerFilterProblems("at", protocol as string, filters as never),
        ).not.toThrow();
      }),
    );
  });
});
