/**
 * Automatic HTTPS end to end on the real cluster: a real Pebble (Let's Encrypt's test CA) and a
 * Gateway of 3 real proxy pods whose HTTPS listener has no certificate, only an issuer. The
 * controller orders the name once for the whole fleet, the proxies answer Pebble's HTTP-01
 * request on port 80, the certificate lands in a Secret and every proxy serves it (checked
 * against Pebble's root, pod by pod); a restarted proxy pod serves it at once; a restarted
 * controller does not order again.
 */
import type { ChildProcess } from "node:child_process";
import { AcmeSetting, GW, acmeSetting, httpsVerified } from "../support/acme";
import { eventually, kubectlOk } from "../support/kube";
import { startInstance, stopInstance, stopInstances } from "../support/instances";
import { proxyPods } from "../support/proxy-pods";
import { acmeSecretName } from "../../capabilities/validation/acme";

describe("automatic HTTPS: issuance with Pebble, one order for the fleet", () => {
  let s: AcmeSetting;
  const procs: ChildProcess[] = [];

  beforeAll(async () => {
    s = await acmeSetting("acme-issue", { replicas: 3 });
  });

  afterAll(async () => {
    await stopInstances(procs);
    await s?.close();
  });

  it("orders the name once, stores it in a Secret, and every proxy serves it", async () => {
    const a = startInstance(s.ns, `acme-a-${Date.now().toString(36)}`, "acme-issue");
    procs.push(a.proc);
    const addr = await eventually("the Gateway's address", s.address, 240_000, 500);

    const issued = await eventually(
      "the listener to be programmed with the issued certificate",
      () => {
        const p = s.listener("Programmed");
        return p.startsWith("True|") ? s.listener("ResolvedRefs") : undefined;
      },
      120_000,
      500,
    );
    expect(issued).toMatch(
      new RegExp(
        `^True\\|ResolvedRefs\\|certificate for ${s.name.replace(/\./g, "\\.")} issued by ACME issuer pebble .*renews at `,
      ),
    );

    // Through the Gateway's address, verified against Pebble's root.
    const root = await s.pebble.root();
    const served = await eventually(
      "https through the Gateway, trusted by Pebble's root",
      async () => {
        const r = await httpsVerified(addr, s.name, root);
        return r.status === 200 ? r : undefined;
      },
      60_000,
      500,
    );

    // The Secret others can read and back up.
    const secret = JSON.parse(
      kubectlOk(["get", "secret", acmeSecretName(s.name), "-n", s.ns, "-o", "json"]),
    ) as {
      type: string;
      metadata: { annotations: Record<string, string> };
      data: Record<string, string>;
    };
    expect(secret.type).toBe("kubernetes.io/tls");
    expect(secret.metadata.annotations["gateway.kengine.io/acme-state"]).toBe("Valid");
    expect(secret.metadata.annotations["gateway.kengine.io/acme-challenges"]).toBeUndefined();
    expect(Buffer.from(secret.data["tls.crt"]!, "base64").toString()).toContain(
      "BEGIN CERTIFICATE",
    );

    // Every proxy pod presents the same certificate (3 pods, one order at Pebble).
    const pods = await eventually(
      "3 ready proxy pods",
      () => {
        const p = proxyPods(s.ns, GW).filter(x => x.ready && !x.deleting);
        return p.length === 3 ? p : undefined;
      },
      120_000,
      500,
    );
    for (const pod of pods) {
      const ip = kubectlOk([
        "get",
        "pod",
        pod.name,
        "-n",
        s.ns,
        "-o",
        "jsonpath={.status.podIP}",
      ]).trim();
      const r = await eventually(
        `proxy ${pod.name} to serve the certificate`,
        async () => {
          const x = await httpsVerified(ip, s.name, root);
          return x.status === 200 ? x : undefined;
        },
        60_000,
        500,
      );
      expect(r.serial).toBe(served.serial);
    }
    expect(s.pebble.orders()).toBe(1);
    expect(a.acme.filter(m => m["acme"] === "acme order")).toHaveLength(1);

    // A new proxy pod serves the certificate as soon as it is ready (last-known-good config).
    kubectlOk(["delete", "pod", pods[0]!.name, "-n", s.ns, "--wait=true"]);
    const fresh = await eventually(
      "a replacement proxy pod, ready",
      () =>
        proxyPods(s.ns, GW).find(x => x.ready && !x.deleting && !pods.some(p => p.name === x.name)),
      120_000,
      250,
    );
    const freshIp = kubectlOk([
      "get",
      "pod",
      fresh.name,
      "-n",
      s.ns,
      "-o",
      "jsonpath={.status.podIP}",
    ]).trim();
    const first = await httpsVerified(freshIp, s.name, root);
    expect(first).toMatchObject({ status: 200, serial: served.serial });

    // A restarted controller reads the Secret and orders nothing.
    await stopInstance(a.proc);
    const b = startInstance(s.ns, `acme-b-${Date.now().toString(36)}`, "acme-issue");
    procs.push(b.proc);
    await eventually(
      "the new controller to lead",
      () => (b.leader ? true : undefined),
      60_000,
      250,
    );
    await eventually(
      "the new controller to program the proxies",
      () => (b.fleet.some(e => e === "pushed" || e === "adopted") ? true : undefined),
      60_000,
      250,
    );
    expect(s.pebble.orders()).toBe(1);
    expect(b.acme.filter(m => m["acme"] === "acme order")).toHaveLength(0);
    expect((await httpsVerified(addr, s.name, root)).status).toBe(200);
  });
});
