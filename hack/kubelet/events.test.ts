import { podEvent } from "./events";

describe("podEvent", () => {
  it("points at the pod and container and names the kubelet as source", () => {
    const e = podEvent(
      { name: "p", namespace: "n", uid: "u" },
      "c",
      "Warning",
      "BackOff",
      "Back-off restarting failed container c in pod n/p",
      "kengine-local",
      "2026-11-21T00:00:00Z",
      "abc",
    );
    expect(e.metadata).toEqual({ name: "p.abc", namespace: "n" });
    expect(e.involvedObject).toEqual({
      apiVersion: "v1",
      kind: "Pod",
      name: "p",
      namespace: "n",
      uid: "u",
      fieldPath: "spec.containers{c}",
    });
    expect(e.source).toEqual({ component: "kubelet", host: "kengine-local" });
    expect(e).toMatchObject({ type: "Warning", reason: "BackOff", count: 1 });
  });
});
