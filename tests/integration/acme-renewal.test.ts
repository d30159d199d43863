/**
 * Automatic HTTPS over time, with short-lived certificates (Pebble issues them for 45 s, so the
 * controller renews 30 s in): the renewed certificate replaces the old one on every proxy while
 * a client keeps connecting (no failed request); then the CA goes away (Pebble stopped): the
 * next renewal fails, the listener's status says so with the error, and the current
 * certificate keeps serving; when the CA is back the name is renewed again.
 */
import type { ChildProcess } from "node:child_process";
import { AcmeSetting, Served, acmeSetting, httpsVerified } from "../support/acme";
import { eventually } from "../support/kube";
import { startInstance, stopInstances } from "../support/instances";

describe("automatic HTTPS: renewal and CA outage (45 s certificates)", () => {
  let s: AcmeSetting;
  const procs: ChildProcess[] = [];

  beforeAll(async () => {
    s = await acmeSetting("acme-renew", { replicas: 2, validitySeconds: 45 });
  });

  afterAll(async () => {
    await stopInstances(procs);
    await s?.close();
  });

  it("renews at two thirds of the lifetime without a failed request, and keeps serving through a CA outage", async () => {
    process.env["KG_ACME_BACKOFF_MS"] = "2000";
    const a = startInstance(s.ns, `acme-r-${Date.now().toString(36)}`, "acme-renew");
    procs.push(a.proc);
    const addr = await eventually("the Gateway's address", s.address, 240_000, 500);
    let root = await s.pebble.root();
    const first = await eventually(
      "https through the Gateway with the first certificate",
      async () => {
        const r = await httpsVerified(addr, s.name, root);
        return r.status === 200 ? r : undefined;
      },
      150_000,
      500,
    );

    // Renewal: a client connects every 200 ms until a new certificate is served.
    const seen: Served[] = [];
    const renewed = await eventually(
      "a renewed certificate (another serial) through the Gateway",
      async () => {
        const r = await httpsVerified(addr, s.name, root);
        seen.push(r);
        return r.status === 200 && r.serial !== first.serial ? r : undefined;
      },
      60_000,
      200,
    );
    expect(seen.filter(r => r.status !== 200)).toEqual([]);
    expect(seen.length).toBeGreaterThan(10);
    expect(s.pebble.orders()).toBe(2);
    expect(s.listener("ResolvedRefs")).toMatch(
      /^True\|ResolvedRefs\|certificate for .* renews at /,
    );

    // Outage: the next renewal fails; status says so; the current certificate keeps serving.
    await s.pebble.stop();
    const failing = await eventually(
      "the listener's status to say that renewal fails",
      () => {
        const c = s.listener("ResolvedRefs");
        return /renewal failing, the current certificate keeps serving: /.test(c) ? c : undefined;
      },
      60_000,
      250,
    );
    expect(failing).toMatch(/^True\|ResolvedRefs\|/);
    expect(failing).toMatch(/keeps serving: POST https:\/\/127\.0\.0\.1:\d+\/.*: /);
    expect(s.listener("Programmed")).toMatch(/^True\|/);
    const during = await httpsVerified(addr, s.name, root);
    expect(during).toMatchObject({ status: 200, serial: renewed.serial });
    expect(a.acme.some(m => m["acme"] === "acme order failed")).toBe(true);

    // The CA is back (a new Pebble root and no accounts): registered again, renewed again.
    await s.pebble.start();
    root = await s.pebble.root();
    const back = await eventually(
      "a certificate from the restarted CA through the Gateway",
      async () => {
        const r = await httpsVerified(addr, s.name, root);
        return r.status === 200 ? r : undefined;
      },
      60_000,
      250,
    );
    expect(back.serial).not.toBe(renewed.serial);
    expect(s.listener("ResolvedRefs")).not.toMatch(/renewal failing/);
  });
});
