import fc from "fast-check";
import { LAST_APPLIED_ANNOTATION, stripForIngest } from "./strip";
import type { KubeObject } from "./types";

const route = (metadata: Record<string, unknown>): KubeObject =>
  ({
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "HTTPRoute",
    metadata: { name: "r", namespace: "ns", resourceVersion: "7", ...metadata },
    spec: { parentRefs: [{ name: "gw" }] },
    status: { parents: [] },
  }) as KubeObject;

describe("stripForIngest", () => {
  it("drops managedFields and the last-applied annotation, keeps every other field", () => {
    const o = route({
      uid: "u",
      generation: 3,
      labels: { a: "1" },
      annotations: { [LAST_APPLIED_ANNOTATION]: "{...}", keep: "me" },
      managedFields: [{ manager: "kubectl" }],
      ownerReferences: [{ uid: "x" }],
    });
    const s = stripForIngest(o) as KubeObject & Record<string, unknown>;
    expect(s.metadata).toEqual({
      name: "r",
      namespace: "ns",
      resourceVersion: "7",
      uid: "u",
      generation: 3,
      labels: { a: "1" },
      annotations: { keep: "me" },
      ownerReferences: [{ uid: "x" }],
    });
    expect(s.spec).toBe((o as KubeObject & { spec: unknown }).spec);
    expect(s.status).toBe((o as KubeObject & { status: unknown }).status);
  });

  it("removes annotations that held only the last-applied one", () => {
    const s = stripForIngest(route({ annotations: { [LAST_APPLIED_ANNOTATION]: "{}" } }));
    expect("annotations" in s.metadata).toBe(false);
  });

  it("returns the object itself when there is nothing to strip", () => {
    const o = route({ annotations: { keep: "me" } });
    expect(stripForIngest(o)).toBe(o);
  });

  it("never changes its input, and what it keeps is exactly the input minus the two fields", () => {
    const meta = fc.record(
      {
        labels: fc.dictionary(fc.string({ minLength: 1, maxLength: 5 }), fc.string()),
        annotations: fc.dictionary(
          fc.oneof(fc.constant(LAST_APPLIED_ANNOTATION), fc.string({ minLength: 1, maxLength: 5 })),
          fc.string(),
        ),
        managedFields: fc.array(fc.record({ manager: fc.string() })),
        uid: fc.string(),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(meta, m => {
        const o = route(m);
        const before = JSON.stringify(o);
        const s = stripForIngest(o);
        expect(JSON.stringify(o)).toBe(before);
        const {
          managedFields: _mf,
          annotations,
          ...rest
        } = o.metadata as typeof o.metadata & {
          managedFields?: unknown;
        };
        const { [LAST_APPLIED_ANNOTATION]: _la, ...keptAnnotations } = annotations ?? {};
        const expected =
          annotations !== undefined && Object.keys(keptAnnotations).length > 0
            ? { ...rest, annotations: keptAnnotations }
            : annotations !== undefined && !(LAST_APPLIED_ANNOTATION in annotations)
              ? { ...rest, annotations }
              : rest;
        expect(s.metadata).toEqual(expected);
        expect({ ...s, metadata: undefined }).toEqual({ ...o, metadata: undefined });
      }),
    );
  });
});
