import type { V1Ingress, V1IngressClass } from "@kubernetes/client-node";
import {
  DEFAULT_CLASS_ANNOTATION,
  INGRESS_CONTROLLER,
  LEGACY_CLASS_ANNOTATION,
  classOf,
  defaultClass,
  isOurIngress,
  ourIngresses,
  servingOf,
} from "./classes";

const cls = (
  name: string,
  controller = INGRESS_CONTROLLER,
  isDefault = false,
  created = "2026-01-01T00:00:00Z",
): V1IngressClass => ({
  metadata: {
    name,
    creationTimestamp: new Date(created),
    annotations: isDefault ? { [DEFAULT_CLASS_ANNOTATION]: "true" } : {},
  },
  spec: { controller },
});
const ing = (name: string, className?: string, legacy?: string): V1Ingress => ({
  metadata: {
    name,
    namespace: "ns",
    annotations: legacy ? { [LEGACY_CLASS_ANNOTATION]: legacy } : {},
  },
  spec: { ingressClassName: className },
});

describe("classOf", () => {
  const classes = [cls("kengine"), cls("nginx", "k8s.io/ingress-nginx", true)];

  it("takes spec.ingressClassName, then the legacy annotation", () => {
    expect(classOf(ing("a", "kengine"), classes)?.metadata?.name).toBe("kengine");
    expect(classOf(ing("a", "nginx"), classes)).toBeUndefined();
    expect(classOf(ing("a", undefined, "kengine"), classes)?.metadata?.name).toBe("kengine");
    // the field wins over the annotation
    expect(classOf(ing("a", "nginx", "kengine"), classes)).toBeUndefined();
    expect(classOf(ing("a", "missing"), classes)).toBeUndefined();
  });

  it("gives Ingresses without a class to the default class only when it is ours", () => {
    expect(classOf(ing("a"), classes)).toBeUndefined();
    const ours = [cls("kengine", INGRESS_CONTROLLER, true), cls("nginx", "k8s.io/ingress-nginx")];
    expect(classOf(ing("a"), ours)?.metadata?.name).toBe("kengine");
  });

  it("picks the newest of several default classes, then by name", () => {
    const both = [
      cls("old", INGRESS_CONTROLLER, true, "2025-01-01T00:00:00Z"),
      cls("new", "other", true, "2026-01-01T00:00:00Z"),
    ];
    expect(defaultClass(both)?.metadata?.name).toBe("new");
    expect(classOf(ing("a"), both)).toBeUndefined();
    const tie = [cls("b", INGRESS_CONTROLLER, true), cls("a", INGRESS_CONTROLLER, true)];
    expect(defaultClass(tie)?.metadata?.name).toBe("a");
  });

  it("lists our Ingresses in namespace/name order", () => {
    const list = ourIngresses(
      [ing("b", "kengine"), ing("x", "nginx"), ing("a", "kengine")],
      classes,
    );
    expect(list.map(i => i.ingress.metadata?.name)).toEqual(["a", "b"]);
  });
});

describe("servingOf", () => {
  const withParams = (parameters: unknown): V1IngressClass => ({
    metadata: { name: "k" },
    spec: { controller: INGRESS_CONTROLLER, parameters: parameters as never },
  });

  it("reads a Gateway or KengineParameters in a namespace", () => {
    expect(
      servingOf(
        withParams({
          apiGroup: "gateway.networking.k8s.io",
          kind: "Gateway",
          name: "gw",
          namespace: "infra",
          scope: "Namespace",
        }),
      ),
    ).toEqual({ kind: "Gateway", namespace: "infra", name: "gw" });
    expect(
      servingOf(
        withParams({
          apiGroup: "gateway.kengine.io",
          kind: "KengineParameters",
          name: "p",
          namespace: "infra",
          scope: "Namespace",
        }),
      ),
    ).toEqual({ kind: "KengineParameters", namespace: "infra", name: "p" });
  });

  it("explains what is wrong otherwise", () => {
    expect(servingOf(withParams(undefined))).toMatchObject({ kind: "Invalid" });
    expect(
      servingOf(withParams({ kind: "ConfigMap", name: "c", namespace: "x", scope: "Namespace" })),
    ).toMatchObject({ kind: "Invalid", reason: expect.stringMatching(/core\/ConfigMap/) });
    expect(
      servingOf(withParams({ apiGroup: "gateway.networking.k8s.io", kind: "Gateway", name: "g" })),
    ).toMatchObject({ kind: "Invalid", reason: expect.stringMatching(/scope: Namespace/) });
  });
});

describe("isOurIngress (admission's look-ups)", () => {
  const classes = [cls("kengine"), cls("nginx", "k8s.io/ingress-nginx", true)];
  const reads: string[] = [];
  const lookups = {
    named: (name: string) => {
      reads.push(`named ${name}`);
      return Promise.resolve(classes.find(c => c.metadata?.name === name));
    },
    all: () => {
      reads.push("all");
      return Promise.resolve(classes);
    },
  };

  it("reads only the named class when the Ingress names one (field or legacy annotation)", async () => {
    reads.length = 0;
    await expect(isOurIngress(ing("a", "kengine"), lookups)).resolves.toBe(true);
    await expect(isOurIngress(ing("b", undefined, "kengine"), lookups)).resolves.toBe(true);
    await expect(isOurIngress(ing("c", "nginx"), lookups)).resolves.toBe(false);
    await expect(isOurIngress(ing("d", "missing"), lookups)).resolves.toBe(false);
    expect(reads).not.toContain("all");
  });

  it("an Ingress naming no class follows the default class, as classOf does", async () => {
    await expect(isOurIngress(ing("e"), lookups)).resolves.toBe(false);
    const ours = {
      ...lookups,
      all: () => Promise.resolve([cls("kengine", INGRESS_CONTROLLER, true)]),
    };
    await expect(isOurIngress(ing("e"), ours)).resolves.toBe(true);
  });
});
