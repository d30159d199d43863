import { emptySnapshot } from "../snapshot";
import { StatusMemo, WriteReport } from "../status";
import type { StatusUpdate } from "../status/compute";
import { ObjectStatusInput, objectStatusJob } from "./status-stage";

const report: WriteReport = { written: 0, conflicts: 0, failed: [] } as unknown as WriteReport;

const fakeWriter = () => {
  const writes: (readonly StatusUpdate[])[] = [];
  let version = 1;
  const writer: ObjectStatusInput["writer"] = {
    freshest: (_k, _ns, _n, cached) => cached,
    get version() {
      return version;
    },
    writtenSince: () => undefined,
    write: async updates => {
      writes.push(updates);
      version++;
      return report;
    },
  };
  return { writer, writes };
};

describe("objectStatusJob", () => {
  it("computes nothing until the queue runs it, then always hands the writer its updates", async () => {
    const { writer, writes } = fakeWriter();
    const reports: WriteReport[] = [];
    const job = objectStatusJob({
      results: { gatewayClasses: [], gateways: [], listenerSets: [], routes: [] },
      addresses: new Map(),
      snapshot: emptySnapshot(),
      now: new Date("2026-11-28T08:00:00.123Z"),
      writer,
      memo: new StatusMemo(),
      report: r => reports.push(r),
    });
    expect(writes).toEqual([]);
    await job();
    expect(writes).toEqual([[]]);
    expect(reports).toEqual([report]);
  });
});
