import { StatusEchoes, onlyStatusChanged } from "./status-echo";

const route = (over: Record<string, unknown> = {}, meta: Record<string, unknown> = {}) => ({
  metadata: { name: "r", namespace: "ns", resourceVersion: "1", generation: 1, ...meta },
  spec: { hostnames: ["a.example"] },
  status: { parents: [] },
  ...over,
});

describe("status echoes", () => {
  it("tells a status-only update from one translation reads", () => {
    const before = route();
    expect(onlyStatusChanged(before, before)).toBe(true);
    expect(
      onlyStatusChanged(
        before,
        route({ status: { parents: [{ x: 1 }] } }, { resourceVersion: "2" }),
      ),
    ).toBe(true);
    expect(onlyStatusChanged(before, route({ spec: { hostnames: ["b.example"] } }))).toBe(false);
    expect(onlyStatusChanged(before, route({}, { generation: 2 }))).toBe(false);
    expect(onlyStatusChanged(before, route({}, { labels: { team: "a" } }))).toBe(false);
    expect(onlyStatusChanged(before, route({}, { annotations: { a: "b" } }))).toBe(false);
  });

  it("keeps the previous Gateway object across status-only updates, and only those", () => {
    const echoes = new StatusEchoes();
    const first = route();
    expect(echoes.stable([first])[0]).toBe(first);
    const echo = route({ status: { conditions: [] } }, { resourceVersion: "2" });
    expect(echoes.stable([echo])[0]).toBe(first);
    const changed = route({ spec: { hostnames: ["c.example"] } }, { resourceVersion: "3" });
    expect(echoes.stable([changed])[0]).toBe(changed);
  });
});
