import {
  formatLogLine,
  LineSplitter,
  nanoTime,
  parseLogLine,
  parseLogQuery,
  renderLogs,
} from "./logs";

const file = [
  formatLogLine({ time: "2026-11-21T10:00:00.000000000Z", stream: "stdout", text: "one" }),
  formatLogLine({ time: "2026-11-21T10:00:01.000000000Z", stream: "stderr", text: "two words" }),
  formatLogLine({ time: "2026-11-21T10:00:02.000000000Z", stream: "stdout", text: "" }),
  formatLogLine({ time: "2026-11-21T10:00:03.000000000Z", stream: "stdout", text: "four" }),
].join("");

describe("log lines", () => {
  it("round-trip, keeping spaces and empty lines", () => {
    expect(parseLogLine("2026-11-21T10:00:01.000000000Z stderr two words")).toEqual({
      time: "2026-11-21T10:00:01.000000000Z",
      stream: "stderr",
      text: "two words",
    });
    expect(parseLogLine("garbage")).toBeUndefined();
    expect(nanoTime(new Date("2026-11-21T10:00:00.123Z"))).toBe("2026-11-21T10:00:00.123000000Z");
  });

  it("render like kubectl logs: all, tail, timestamps, since, limit", () => {
    expect(renderLogs(file, { timestamps: false })).toBe("one\ntwo words\n\nfour\n");
    expect(renderLogs(file, { timestamps: false, tailLines: 2 })).toBe("\nfour\n");
    expect(renderLogs(file, { timestamps: false, tailLines: 0 })).toBe("");
    expect(renderLogs(file, { timestamps: true, tailLines: 1 })).toBe(
      "2026-11-21T10:00:03.000000000Z four\n",
    );
    expect(
      renderLogs(file, { timestamps: false, sinceTime: new Date("2026-11-21T10:00:01Z") }),
    ).toBe("two words\n\nfour\n");
    expect(renderLogs(file, { timestamps: false, limitBytes: 5 })).toBe("one\nt");
  });
});

describe("parseLogQuery", () => {
  it("reads the kubelet's query parameters", () => {
    const now = new Date("2026-11-21T10:00:10Z");
    const q = parseLogQuery(
      new URLSearchParams("follow=true&tailLines=5&timestamps=true&sinceSeconds=10"),
      now,
    );
    expect(q.follow).toBe(true);
    expect(q.previous).toBe(false);
    expect(q.query).toEqual({
      tailLines: 5,
      timestamps: true,
      sinceTime: new Date("2026-11-21T10:00:00Z"),
      limitBytes: undefined,
    });
    expect(parseLogQuery(new URLSearchParams("previous=true")).previous).toBe(true);
  });
});

describe("LineSplitter", () => {
  it("joins partial chunks and strips CR", () => {
    const s = new LineSplitter();
    expect(s.push("ab")).toEqual([]);
    expect(s.push("c\r\nde\nf")).toEqual(["abc", "de"]);
    expect(s.flush()).toEqual(["f"]);
    expect(s.flush()).toEqual([]);
  });
});
