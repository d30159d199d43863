import { bindingFor, wantsBinding } from "./binder";

describe("binder", () => {
  const pod = (spec: { nodeName?: string; schedulerName?: string }, deleting = false) => ({
    metadata: {
      name: "p",
      namespace: "n",
      uid: "u",
      ...(deleting ? { deletionTimestamp: "t" } : {}),
    },
    spec,
  });
  it("binds unscheduled default-scheduler pods only", () => {
    expect(wantsBinding(pod({}))).toBe(true);
    expect(wantsBinding(pod({ schedulerName: "default-scheduler" }))).toBe(true);
    expect(wantsBinding(pod({ schedulerName: "other" }))).toBe(false);
    expect(wantsBinding(pod({ nodeName: "x" }))).toBe(false);
    expect(wantsBinding(pod({}, true))).toBe(false);
    expect(bindingFor(pod({}), "kengine-local").target).toEqual({
      apiVersion: "v1",
      kind: "Node",
      name: "kengine-local",
    });
  });
});
