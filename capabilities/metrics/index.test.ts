import { getHeapStatistics } from "node:v8";
import { Counter, Registry } from "prom-client";
import { electionMetrics, registry, serveThrough, statusMetrics } from ".";

/** One scrape's samples of a gauge with one label: `value(labelValue)` (throws when missing). */
async function scrapeGauge(name: string, label: string): Promise<(v: string) => number> {
  const text = await registry.metrics();
  return v => {
    const m = new RegExp(`^kengine_gateway_${name}\\{${label}="${v}"\\} ([0-9.e+-]+)$`, "m").exec(
      text,
    );
    if (!m) throw new Error(`no ${name}{${label}="${v}"} in:\n${text}`);
    return Number(m[1]);
  };
}

describe("serveThrough", () => {
  it("appends our registry to the collector's output, once", async () => {
    const ours = new Registry();
    new Counter({ name: "kengine_gateway_test_total", help: "t", registers: [ours] }).inc(3);
    const collector = { getMetrics: async () => "# HELP pepr_errors x\npepr_errors 0" };
    serveThrough(collector, ours);
    serveThrough(collector, ours);
    const text = await collector.getMetrics();
    expect(text.startsWith("# HELP pepr_errors x\npepr_errors 0\n")).toBe(true);
    expect(text.match(/kengine_gateway_test_total 3/g)).toHaveLength(1);
  });
});

describe("controller metrics", () => {
  it("count status outcomes by kind and show the election state", async () => {
    statusMetrics.written("Gateway");
    statusMetrics.unchanged("HTTPRoute", 4);
    statusMetrics.unchanged("HTTPRoute", 0);
    statusMetrics.conflict("Gateway");
    statusMetrics.failed("HTTPRoute", "invalid");
    const e = electionMetrics("lease-a", "me");
    let text = await registry.metrics();
    expect(text).toContain('kengine_gateway_status_writes_total{kind="Gateway"} 1');
    expect(text).toContain('kengine_gateway_status_noops_total{kind="HTTPRoute"} 4');
    expect(text).toContain('kengine_gateway_status_conflicts_total{kind="Gateway"} 1');
    expect(text).toContain(
      'kengine_gateway_status_write_failures_total{kind="HTTPRoute",reason="invalid"} 1',
    );
    expect(text).toContain('kengine_gateway_is_leader{lease="lease-a",identity="me"} 0');
    e.leading(true);
    text = await registry.metrics();
    expect(text).toContain('kengine_gateway_is_leader{lease="lease-a",identity="me"} 1');
    expect(text).toContain(
      'kengine_gateway_leader_transitions_total{lease="lease-a",identity="me",to="leader"} 1',
    );
    e.attempt({ outcome: "acquired", ms: 40 });
    e.attempt({ outcome: "renewed", ms: 700, sinceLastRenewMs: 7_000 });
    text = await registry.metrics();
    const labels = 'lease="lease-a",identity="me"';
    expect(text).toContain(
      `kengine_gateway_lease_attempt_seconds_bucket{le="0.05",${labels},outcome="acquired"} 1`,
    );
    expect(text).toContain(
      `kengine_gateway_lease_attempt_seconds_bucket{le="0.5",${labels},outcome="renewed"} 0`,
    );
    expect(text).toContain(
      `kengine_gateway_lease_attempt_seconds_bucket{le="1",${labels},outcome="renewed"} 1`,
    );
    // the renewal interval: 7 s, in the 8 s bucket and not the 6 s one
    expect(text).toContain(
      `kengine_gateway_lease_renew_interval_seconds_bucket{le="6",${labels}} 0`,
    );
    expect(text).toContain(
      `kengine_gateway_lease_renew_interval_seconds_bucket{le="8",${labels}} 1`,
    );
    expect(text).toContain(`kengine_gateway_lease_renew_interval_seconds_count{${labels}} 1`);
  });
});

describe("heap gauge", () => {
  it("shows the heap V8 reports at each scrape: used ≤ total, used < limit, and it follows allocation", async () => {
    const read = async () => {
      const value = await scrapeGauge("heap_bytes", "kind");
      return { used: value("used"), total: value("total"), limit: value("limit") };
    };
    const before = await read();
    expect(before.used).toBeGreaterThan(0);
    expect(before.used).toBeLessThanOrEqual(before.total);
    expect(before.used).toBeLessThan(before.limit);
    // 8 arrays of 2^20 elements (≥ 4 bytes each) live more: the next scrape sees them
    const kept = Array.from({ length: 8 }, (_, i) => new Array<number>(2 ** 20).fill(i));
    const after = await read();
    const direct = getHeapStatistics();
    // Absolute, not a difference from `before`: a collection between the two scrapes may free
    // more garbage of this worker's earlier test files than the arrays take.
    expect(after.used).toBeGreaterThan(32 * 2 ** 20);
    expect(after.used).toBeLessThanOrEqual(after.total);
    expect(after.limit).toBe(direct.heap_size_limit);
    expect(Math.abs(after.used - direct.used_heap_size)).toBeLessThan(16 * 2 ** 20);
    expect(kept).toHaveLength(8);
  });
});

describe("process memory gauge", () => {
  it("shows memory outside the heap at each scrape: Buffers count in external and array_buffers, all within rss", async () => {
    const read = async () => {
      const value = await scrapeGauge("process_memory_bytes", "kind");
      return {
        rss: value("rss"),
        external: value("external"),
        arrayBuffers: value("array_buffers"),
      };
    };
    const before = await read();
    expect(before.arrayBuffers).toBeLessThanOrEqual(before.external);
    // 64 MiB in Buffers, touched so the pages are resident: external, array_buffers and rss grow
    const kept = Array.from({ length: 4 }, (_, i) => Buffer.alloc(16 * 2 ** 20, i + 1));
    const pre = process.memoryUsage();
    const after = await read();
    const direct = process.memoryUsage();
    // Not a difference from `before`: this jest worker's earlier test files may have left Buffers
    // that a collection between the two scrapes frees (CI saw +9.9 MB across the allocation).
    // The kept Buffers are live, so every scrape from now on counts them.
    expect(after.arrayBuffers).toBeGreaterThanOrEqual(64 * 2 ** 20);
    expect(after.external).toBeGreaterThanOrEqual(after.arrayBuffers);
    expect(after.rss).toBeGreaterThan(after.arrayBuffers);
    // ... and the values are the process's own: between its readings just before and just after
    // the scrape (a collection during the scrape may free earlier files' Buffers: CI saw the
    // value 17.4 MB above the reading after), with the scrape's own text as slack
    const within = (v: number, a: number, b: number) => {
      expect(v).toBeGreaterThanOrEqual(Math.min(a, b) - 4 * 2 ** 20);
      expect(v).toBeLessThanOrEqual(Math.max(a, b) + 4 * 2 ** 20);
    };
    within(after.arrayBuffers, pre.arrayBuffers, direct.arrayBuffers);
    within(after.external, pre.external, direct.external);
    expect(kept).toHaveLength(4);
  });
});

describe("event loop delay gauge", () => {
  it("shows how late the loop ran since the previous scrape, and starts again from there", async () => {
    const read = async () => {
      const value = await scrapeGauge("event_loop_delay_seconds", "quantile");
      return { p50: value("p50"), p99: value("p99"), max: value("max") };
    };
    await read(); // the first scrape starts the measurement
    const idle = () => new Promise(r => setTimeout(r, 100));
    await idle();
    // the loop held for 300 ms: the next scrape's max shows it
    const until = Date.now() + 300;
    while (Date.now() < until);
    await idle();
    const busy = await read();
    expect(busy.max).toBeGreaterThanOrEqual(0.25);
    expect(busy.p50).toBeLessThanOrEqual(busy.p99);
    expect(busy.p99).toBeLessThanOrEqual(busy.max);
    // reset at each scrape: an idle interval after it shows no such delay
    await idle();
    await idle();
    expect((await read()).max).toBeLessThan(busy.max);
  });
});
