/**
 * The real-Caddy half of the translator's property tests: a fixed-seed sample of random valid
 * snapshots (tests/support/arbitrary-snapshot.ts) is translated and every config is POSTed to a
 * real Caddy (with caddy-l4) through /load; each must be accepted. The pure half
 * (never throws, deterministic) is capabilities/translate/property.test.ts.
 *
 * Then the hunt for hostile input: hostile tenant objects generated from the CRDs' patterns
 * (tests/support/arbitrary-hostile.ts), one at a time next to a healthy route on a shared
 * Gateway, loaded into the bundled proxy and Caddy 2.8 (Kengine flavour); the healthy route
 * must answer and the object must be refused at admission, programmed or reported. What the
 * hunt found is replayed by name (tests/support/hostile-regressions.ts).
 *
 * Then the tenant boundary (docs/operations.md §11): a fixed-seed sample of tenants aimed at the proxy itself
 * and at the platform's name (tests/support/arbitrary-boundary.ts), each loaded into the bundled
 * proxy beside the platform's Gateway; an anonymous client asserts that nothing of an admin API
 * answers, no request reaches a loopback canary or loops through the proxy, and the platform's
 * name answers only the platform's route with its own certificate (BOUNDARY_REGRESSIONS replay
 * what it found). Then the same for tenants' Ingresses (tests/support/arbitrary-ingress-boundary.ts),
 * converted as the controller converts them.
 */
import fc from "fast-check";
import { Server, createServer } from "node:http";
import { AddressInfo } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { request } from "undici";
import { renderCaddyJSON, toCaddyConfig } from "../../capabilities/caddy";
import { KubeObject, snapshotOf } from "../../capabilities/snapshot";
import { translate } from "../../capabilities/translate";
import { ProxyFlavor } from "../../capabilities/flavor/proxy-flavor";
import { arbitrarySnapshot } from "../support/arbitrary-snapshot";
import {
  HEALTHY_HOST,
  HEALTHY_PATH,
  arbitraryHostile,
  sharedGateway,
} from "../support/arbitrary-hostile";
import { BOUNDARY_REGRESSIONS, REGRESSIONS } from "../support/hostile-regressions";
import { verdictOf } from "../support/hostile-verdict";
import { Caddy, loadGateway, startCaddy } from "../support/caddy";
import { withProxyFlavor } from "../support/flavor";
import { arbitraryIngressBoundary } from "../support/arbitrary-ingress-boundary";
import { IngressStage } from "../../capabilities/reconcile/ingress-stage";
import { freePort, listenerPortOffset } from "../support/ports";
import {
  BoundaryPorts,
  BoundarySample,
  PLATFORM_CERT_CN,
  PLATFORM_HOST,
  PLATFORM_PATH,
  TENANT_HOST,
  TENANT_TOKEN,
  arbitraryBoundary,
  boundaryGateway,
  boundaryPathOf,
  hostFor,
} from "../support/arbitrary-boundary";
import {
  ADMIN_HOSTS,
  ADMIN_PATHS,
  HARMLESS_LOAD,
  HostCanary,
  hostCanary,
  looksLikeAdmin,
} from "../support/boundary";

const SAMPLE = Number(process.env.KG_PROPERTY_SAMPLE ?? 40);
const SEED = Number(process.env.KG_PROPERTY_SEED ?? 20261121);

let caddy: Caddy | undefined;
let errorAddr = "";

beforeAll(async () => {
  caddy = await startCaddy({ name: "property-caddy" });
  errorAddr = `127.0.0.1:${await freePort()}`;
});

afterAll(async () => {
  await caddy?.stop();
});

describe(`random valid snapshots (seed ${SEED}): Caddy accepts every config`, () => {
  const samples = fc.sample(arbitrarySnapshot, { numRuns: SAMPLE, seed: SEED });
  it.each(samples.map((objects, i) => [i, objects] as const))("sample %i", async (_i, objects) => {
    const result = translate(snapshotOf(objects));
    for (const ir of result.gateways) {
      const config = toCaddyConfig(ir, {
        bindHost: "127.0.0.1",
        portOffset: listenerPortOffset(),
        errorResponderListen: errorAddr,
        management: { adminListen: caddy!.adminAddress },
      });
      const res = await caddy!.load(renderCaddyJSON(config));
      const refusal =
        res.status === 200 ? "" : `Caddy refused the config (${res.status}): ${res.text}`;
      expect(refusal).toBe("");
    }
  });
});

/* ------------------------------------------------------------------ the hostile-object hunt */

const HOSTILE_SAMPLE = Number(process.env.KG_HOSTILE_SAMPLE ?? 1000);
/** A new seed each run (thousands of objects across runs); KG_HOSTILE_SEED replays one. */
const HOSTILE_SEED = Number(process.env.KG_HOSTILE_SEED ?? Date.now() % 2 ** 31);

/**
 * One hostile object next to the healthy route: every config the translator emits loads, the
 * healthy route answers through it, and the object is refused at admission, programmed, or
 * reported in its own status.
 */
async function hostileCase(
  proxy: Caddy,
  flavor: ProxyFlavor,
  hostile: readonly KubeObject[],
): Promise<void> {
  const objects = withProxyFlavor([...sharedGateway(echoPort), ...hostile], flavor);
  const result = translate(snapshotOf(objects));
  expect(result.gateways).toHaveLength(1);
  await loadGateway(proxy, result.gateways[0]!);
  const send = () =>
    request(`http://127.0.0.1:${80 + listenerPortOffset()}${HEALTHY_PATH}`, {
      reset: true,
      headers: { host: HEALTHY_HOST },
    });
  // Right after a /load, a proxy without our listener module (Caddy 2.8) can close or reset a
  // new connection its outgoing server accepted while shutting down: the reload race
  // golden-caddy.test.ts retries too. The request is sent again (twice at most) on those
  // errors only; a proxy that died refuses it (ECONNREFUSED), and the next load.
  const dropped = (e: unknown) => /other side closed|ECONNRESET/.test(String(e));
  const res = await send()
    .catch(e => (dropped(e) ? send() : Promise.reject(e)))
    .catch(e => (dropped(e) ? send() : Promise.reject(e)));
  expect({ status: res.statusCode, body: await res.body.text() }).toEqual({
    status: 200,
    body: `echo ${HEALTHY_PATH}`,
  });
  for (const obj of hostile.filter(o => o.kind !== "Secret")) {
    const verdict = verdictOf(obj, result);
    expect(verdict.kind).not.toBe("silent");
  }
  // A TLS Secret that cannot be served is its listener's ResolvedRefs=False, naming the Secret.
  const secret = hostile.find(o => o.kind === "Secret");
  if (secret && secret.metadata.name !== "tls-good") {
    const ls = result.statuses.listenerSets.find(l => l.name === "hostile");
    const https = ls?.listeners.find(l => l.name === "https");
    expect(https?.conditions.find(c => c.type === "ResolvedRefs")).toMatchObject({
      status: "False",
      reason: "InvalidCertificateRef",
      message: expect.stringContaining(`Secret tenant/${secret.metadata.name} cannot be served`),
    });
  }
}

let echoServer: Server;
let echoPort = 0;
let caddy28: Caddy | undefined;

describe(`hostile tenant objects next to a healthy route (seed ${HOSTILE_SEED})`, () => {
  beforeAll(async () => {
    echoServer = createServer((req, res) => res.writeHead(200).end(`echo ${req.url}`));
    await new Promise<void>(r => echoServer.listen(0, "127.0.0.1", () => r()));
    echoPort = (echoServer.address() as AddressInfo).port;
    caddy28 = await startCaddy({ name: "property-caddy-2.8", peer: "caddy-2.8" });
  });

  afterAll(async () => {
    await caddy28?.stop();
    echoServer.closeAllConnections();
    await new Promise(r => echoServer.close(r));
  });

  it.each(Object.entries(REGRESSIONS))("regression: %s", async (_name, hostile) => {
    await hostileCase(caddy!, "Bundled", hostile);
    await hostileCase(caddy28!, "Kengine", hostile);
  });

  it(`${HOSTILE_SAMPLE} generated objects on the bundled proxy, a quarter of them on Caddy 2.8`, async () => {
    const samples = fc.sample(arbitraryHostile, { numRuns: HOSTILE_SAMPLE, seed: HOSTILE_SEED });
    for (const [i, hostile] of samples.entries()) {
      const where = `sample ${i} of seed ${HOSTILE_SEED}: ${JSON.stringify(hostile.at(-1))}`;
      try {
        await hostileCase(caddy!, "Bundled", hostile);
        if (i % 4 === 0) await hostileCase(caddy28!, "Kengine", hostile);
      } catch (e) {
        throw new Error(`${where}\n${e instanceof Error ? e.message : String(e)}`);
      }
    }
    // Both proxies are still alive.
    for (const proxy of [caddy!, caddy28!])
      expect((await proxy.admin("GET", "/config/")).status).toBe(200);
  });
});

/* ------------------------------------------------------------------ the tenant boundary */

const BOUNDARY_SAMPLE = Number(process.env.KG_BOUNDARY_SAMPLE ?? 150);
const BOUNDARY_SEED = Number(process.env.KG_BOUNDARY_SEED ?? 20261128);
const INGRESS_BOUNDARY_SAMPLE = Number(process.env.KG_INGRESS_BOUNDARY_SAMPLE ?? 40);

/** What an anonymous client saw of one tenant's objects (boundaryCase). */
interface BoundaryVerdict {
  /** The platform's name: its route's path, another path, the tenant's HTTP-01 token. */
  readonly platform: readonly string[];
  /** The certificate's CN presented for the platform's name. */
  readonly platformCertificate: string;
  /** Replies that came from an admin API. */
  readonly admin: readonly string[];
  /**
   * Requests that looped: no answer in time, or 431 (a proxy dialling its own listener adds a
   * forwarding header at each pass until the request is too large).
   */
  readonly looped: readonly string[];
  /** Requests the canary (a loopback destination) received. */
  readonly canary: readonly string[];
}

interface Probe {
  readonly host: string;
  readonly what: string;
  readonly status: number;
  readonly body: string;
  readonly error?: string;
}

/**
 * One request to the proxy's HTTP listener as an anonymous client; never rejects. A connection
 * closed unanswered right after a reload (the old server shutting down) is asked again, twice at
 * most, as hostileCase does; a loop shows as a timeout or 431, not as that.
 */
async function probe(
  host: string,
  method: "GET" | "POST",
  path: string,
  body?: string,
): Promise<Probe> {
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await request(`http://127.0.0.1:${80 + listenerPortOffset()}${path}`, {
        method,
        reset: true,
        headers: { host, ...(body !== undefined && { "content-type": "application/json" }) },
        body,
        headersTimeout: 2000,
        bodyTimeout: 2000,
      });
      const text = await res.body.text();
      return { host, what: `${method} ${path}`, status: res.statusCode, body: text.slice(0, 2000) };
    } catch (e) {
      if (attempt < 3 && /other side closed|ECONNRESET/.test(String(e))) continue;
      return { host, what: `${method} ${path}`, status: 0, body: "", error: String(e) };
    }
  }
}

/** The certificate's subject CN the proxy presents for `servername` on its HTTPS listener. */
function presentedCN(servername: string): Promise<string> {
  return new Promise(resolve => {
    const s = tlsConnect(
      {
        host: "127.0.0.1",
        port: 443 + listenerPortOffset(),
        servername,
        rejectUnauthorized: false,
      },
      () => {
        const cn = (s.getPeerCertificate() as { subject?: { CN?: string } }).subject?.CN ?? "";
        s.destroy();
        resolve(String(cn));
      },
    );
    s.setTimeout(5000, () => s.destroy(new Error("timeout")));
    s.on("error", e => resolve(`error: ${e.message}`));
  });
}

describe(`the tenant boundary (seed ${BOUNDARY_SEED}, ${BOUNDARY_SAMPLE} generated tenants)`, () => {
  const servers: Server[] = [];
  let platformEcho = 0;
  let tenantEcho = 0;
  let canary: HostCanary;
  /** Stands for an admin API on loopback TCP when the test proxy keeps its own on a socket. */
  let adminDecoy: HostCanary;
  let ports: BoundaryPorts;
  /** The admin API's TCP port if the test proxy listens on one, else the decoy's. */
  const adminPort = (): number => {
    const m = /^(?:[\d.]+|localhost|\[[\d:]+\]):(\d+)$/.exec(caddy!.adminAddress);
    return m ? Number(m[1]) : adminDecoy.port;
  };
  const stats = {
    samples: 0,
    requests: 0,
    statuses: {} as Record<string, number>,
    /** Ingress samples served (routes made), not served, and with problems reported. */
    ingresses: { served: 0, notServed: 0, withProblems: 0 },
  };

  const serve = async (answer: string): Promise<number> => {
    const s = createServer((req, res) => {
      req.resume();
      req.on("end", () => res.writeHead(200).end(`${answer} ${req.url}`));
    });
    servers.push(s);
    await new Promise<void>(r => s.listen(0, "127.0.0.1", () => r()));
    return (s.address() as AddressInfo).port;
  };

  beforeAll(async () => {
    platformEcho = await serve("echo");
    tenantEcho = await serve("tenant");
    canary = await hostCanary();
    adminDecoy = await hostCanary("127.0.0.1", JSON.stringify({ admin: {}, apps: {} }));
    ports = {
      admin: adminPort(),
      canary: canary.port,
      listener: 80 + listenerPortOffset(),
      errorResponder: await freePort(),
    };
  });

  afterAll(async () => {
    await canary?.close();
    await adminDecoy?.close();
    for (const s of servers) {
      s.closeAllConnections();
      await new Promise(r => s.close(r));
    }
    console.log(`tenant boundary property: ${JSON.stringify(stats)}`);
  });

  /**
   * One tenant's objects beside the platform's Gateway, loaded into the Bundled proxy; then, as an
   * anonymous client: the platform's name answers only the platform's route (its path, 404
   * elsewhere, no tenant HTTP-01 answer, its own certificate); no admin API path answers under any
   * Host spelling or tenant name; nothing reached the canary; no request hung (a proxy dialling
   * its own listener loops until it times out).
   */
  async function boundaryCase(sample: BoundarySample): Promise<BoundaryVerdict> {
    // A hole found by an earlier case may have killed the proxy: each case gets a live one.
    const alive = await caddy!.admin("GET", "/config/").then(
      r => r.status === 200,
      () => false,
    );
    if (!alive) {
      await caddy!.stop();
      caddy = await startCaddy({ name: "property-caddy" });
      ports = { ...ports, admin: adminPort() };
    }
    const objects = withProxyFlavor(
      [...boundaryGateway(platformEcho, tenantEcho, sample.externalHostnames), ...sample.objects],
      "Bundled",
    );
    // Ingresses become routes and ListenerSets as the controller converts them
    const stored = snapshotOf(objects);
    const derived = new IngressStage().derive(stored);
    for (const key of derived.ours) {
      const served = derived.snapshot.objects.HTTPRoute.size > stored.objects.HTTPRoute.size;
      stats.ingresses[served ? "served" : "notServed"]++;
      if ((derived.problems.get(key)?.length ?? 0) > 0) stats.ingresses.withProblems++;
    }
    const result = translate(derived.snapshot);
    expect(result.gateways).toHaveLength(1);
    const config = toCaddyConfig(result.gateways[0]!, {
      bindHost: "127.0.0.1",
      portOffset: listenerPortOffset(),
      errorResponderListen: `127.0.0.1:${ports.errorResponder}`,
      management: { adminListen: caddy!.adminAddress },
    });
    const loaded = await caddy!.load(renderCaddyJSON(config));
    expect(loaded.status === 200 ? "" : loaded.text).toBe("");
    const hits = canary.hits.length;
    const decoyHits = adminDecoy.hits.length;

    const probes: Probe[] = [
      await probe(PLATFORM_HOST, "GET", PLATFORM_PATH),
      await probe(PLATFORM_HOST, "GET", "/other"),
      await probe(PLATFORM_HOST, "GET", `/.well-known/acme-challenge/${TENANT_TOKEN}`),
    ];
    const platform = probes.map(p => `${p.status} ${p.body}`);
    const cn = await presentedCN(PLATFORM_HOST);
    const hosts = [
      ...ADMIN_HOSTS,
      `localhost:${ports.admin}`,
      `127.0.0.1:${ports.admin}`,
      TENANT_HOST,
      "x.example",
      ...(sample.hosts ?? []),
    ];
    for (const host of hosts)
      for (const p of ADMIN_PATHS)
        probes.push(
          await probe(host, p.method, p.path, p.method === "POST" ? HARMLESS_LOAD : undefined),
        );
    // each XBackend of the route on its own path, under the route's own name
    const route = sample.objects.find(
      o => o.kind === "HTTPRoute" && o.metadata.name === "boundary",
    );
    const routeHost = hostFor(
      (route as { spec?: { hostnames?: string[] } } | undefined)?.spec?.hostnames ?? [],
    );
    const xbs = sample.objects.filter(o => o.kind === "XBackend").length;
    for (let i = 0; i < xbs; i++)
      for (const p of ADMIN_PATHS)
        probes.push(
          await probe(
            routeHost,
            p.method,
            `${boundaryPathOf(i)}${p.path}`,
            p.method === "POST" ? HARMLESS_LOAD : undefined,
          ),
        );
    // mirror copies leave after the answer: give them the time a loopback dial takes
    await new Promise(r => setTimeout(r, 50));

    stats.samples++;
    stats.requests += probes.length + 1;
    for (const p of probes) stats.statuses[p.status] = (stats.statuses[p.status] ?? 0) + 1;
    return {
      platform,
      platformCertificate: cn,
      admin: probes
        .filter(p => looksLikeAdmin(p.status, p.body))
        .map(p => `${p.host} ${p.what}: ${p.status} ${p.body.slice(0, 200)}`),
      looped: probes
        .filter(p => p.status === 0 || p.status === 431)
        .map(p => `${p.host} ${p.what}: ${p.status} ${p.error ?? ""}`),
      canary: [...canary.hits.slice(hits), ...adminDecoy.hits.slice(decoyHits)].map(
        h => `${h.port} ${h.method} ${h.host}${h.url}`,
      ),
    };
  }

  /** What every case must see (boundaryCase). */
  const HELD: BoundaryVerdict = {
    platform: [`200 echo ${PLATFORM_PATH}`, "404 ", "404 "],
    platformCertificate: PLATFORM_CERT_CN,
    admin: [],
    looped: [],
    canary: [],
  };

  /** Which parts of the boundary a verdict breaks. */
  const broken = (v: BoundaryVerdict): string[] =>
    (Object.keys(HELD) as (keyof BoundaryVerdict)[]).filter(
      k => JSON.stringify(v[k]) !== JSON.stringify(HELD[k]),
    );

  it.each(Object.keys(BOUNDARY_REGRESSIONS))("regression: %s", async name => {
    expect(await boundaryCase(BOUNDARY_REGRESSIONS[name]!(ports))).toEqual(HELD);
  });

  /**
   * Runs every sample (a hole does not hide the next): the failures are counted by what they
   * break, and the first of each kind is shown whole.
   */
  async function hunt(samples: readonly BoundarySample[], seed: number): Promise<void> {
    const holes = new Map<string, { count: number; first: string }>();
    for (const [i, sample] of samples.entries()) {
      let kinds: string[];
      let shown: string;
      try {
        const v = await boundaryCase(sample);
        kinds = broken(v);
        shown = JSON.stringify(v, null, 1);
      } catch (e) {
        kinds = ["load"];
        shown = e instanceof Error ? e.message : String(e);
      }
      for (const k of kinds) {
        const h = holes.get(k);
        if (h) h.count++;
        else
          holes.set(k, {
            count: 1,
            first: `sample ${i} of seed ${seed} (externalHostnames ${sample.externalHostnames}): ${JSON.stringify(sample.objects.filter(o => o.metadata.name !== "tls-good"))}\n${shown.slice(0, 3000)}`,
          });
      }
    }
    expect(Object.fromEntries(holes)).toEqual({});
    expect((await caddy!.admin("GET", "/config/")).status).toBe(200);
  }

  it(`${BOUNDARY_SAMPLE} generated tenants on the Bundled proxy: no admin answer, no dial to a refused destination, no other owner's name served`, async () => {
    const before = stats.samples;
    await hunt(
      fc.sample(arbitraryBoundary(ports), { numRuns: BOUNDARY_SAMPLE, seed: BOUNDARY_SEED }),
      BOUNDARY_SEED,
    );
    expect(stats.samples - before).toBe(BOUNDARY_SAMPLE);
  }, 600_000);

  it(`${INGRESS_BOUNDARY_SAMPLE} generated tenant Ingresses on the Bundled proxy: the same boundary`, async () => {
    const before = { ...stats.ingresses };
    await hunt(
      fc.sample(arbitraryIngressBoundary(ports), {
        numRuns: INGRESS_BOUNDARY_SAMPLE,
        seed: BOUNDARY_SEED,
      }),
      BOUNDARY_SEED,
    );
    // The fixed seed's sample holds both kinds (each Ingress one of ours): Ingresses the proxy
    // serves beside the platform's routes, and Ingresses with problems reported.
    expect(stats.ingresses.served).toBeGreaterThan(before.served);
    expect(stats.ingresses.withProblems).toBeGreaterThan(before.withProblems);
  }, 600_000);
});
