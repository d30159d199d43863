import { hostname } from "node:os";
import { PassThrough } from "node:stream";
import { createLog, LogOptions } from "./log";

/** Logs through a fresh logger and returns the JSON lines it wrote. */
async function lines(
  options: LogOptions,
  write: (log: ReturnType<typeof createLog>) => void,
): Promise<Record<string, unknown>[]> {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on("data", (c: Buffer) => chunks.push(c));
  const log = createLog({ ...options, stream });
  write(log);
  const done = new Promise(r => log.on("finish", r));
  log.end();
  await done;
  await new Promise(r => setImmediate(r)); // the transport's last write reaches the stream
  return Buffer.concat(chunks)
    .toString("utf8")
    .split("\n")
    .filter(Boolean)
    .map(l => JSON.parse(l) as Record<string, unknown>);
}

describe("the module's log lines", () => {
  it("have Pepr's (pino's) shape: numeric level, time, pid, hostname, msg, then the entry's fields", async () => {
    const before = Date.now();
    const [line, ...rest] = await lines({}, log =>
      log.warn("proxy settings", { gateway: "ns/gw", problem: "x" }),
    );
    expect(rest).toEqual([]);
    expect(Object.keys(line!).slice(0, 5)).toEqual(["level", "time", "pid", "hostname", "msg"]);
    expect(line).toEqual({
      level: 40,
      time: expect.any(Number),
      pid: process.pid,
      hostname: hostname(),
      msg: "proxy settings",
      component: "kengine-gateway",
      gateway: "ns/gw",
      problem: "x",
    });
    expect(line!.time as number).toBeGreaterThanOrEqual(before);
  });

  it("maps every level to pino's number and keeps LOG_LEVEL's filter, pino names included", async () => {
    const all = (log: ReturnType<typeof createLog>) => {
      log.error("e");
      log.warn("w");
      log.info("i");
      log.debug("d");
      log.silly("s");
    };
    const levels = async (level?: string) =>
      (await lines({ level }, all)).map(l => [l.msg, l.level]);
    expect(await levels()).toEqual([
      ["e", 50],
      ["w", 40],
      ["i", 30],
    ]);
    expect(await levels("debug")).toEqual([
      ["e", 50],
      ["w", 40],
      ["i", 30],
      ["d", 20],
    ]);
    expect((await levels("trace")).map(([m]) => m)).toEqual(["e", "w", "i", "d", "s"]);
    expect(await levels("fatal")).toEqual([["e", 50]]);
  });

  it("writes ISO times when PINO_TIME_STAMP=iso (as Pepr does)", async () => {
    const [line] = await lines({ isoTime: true }, log => log.info("x"));
    expect(line!.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });
});
