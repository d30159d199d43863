/**
 * The isolation stage with a fake proxy: configs are the lists of objects they contain, and
 * the proxy refuses any config holding a "bad" object, naming it.
 */
import { createHash } from "node:crypto";
import { FleetEvent, ProxyEndpoint, Target } from "../proxies";
import { SealedConfig } from "../caddy";
import { RefusableObject, RefusedObject, identityOf } from "../translate";
import { GatedPlan, Isolation, MAX_TRACES } from "./isolation";

const GW = "default/gw";
const endpoint: ProxyEndpoint = {
  name: "default/p-0",
  address: "10.244.0.9",
  port: 19443,
  serverName: "p-0",
};
const route = (name: string): RefusableObject => ({
  kind: "HTTPRoute",
  namespace: "default",
  name,
  fingerprint: `f-${name}`,
});
const sealed = (ids: readonly string[]): SealedConfig => {
  const bytes = Buffer.from(JSON.stringify(ids));
  return { bytes, hash: createHash("sha256").update(bytes).digest("hex") };
};

function setup(objects: RefusableObject[], bad: ReadonlySet<string>, validateStatus = 200) {
  const changes: number[] = [];
  const validations: string[][] = [];
  const configOf = (_gw: string, refused: readonly RefusedObject[]) => {
    const out = new Set(refused.map(identityOf));
    const kept = objects.filter(o => !out.has(identityOf(o)));
    return { ...sealed(kept.map(o => o.name)), candidates: kept };
  };
  const isolation = new Isolation({
    configOf,
    validate: (_e, bytes) => {
      const names = JSON.parse(bytes.toString()) as string[];
      validations.push(names);
      if (validateStatus !== 200)
        return Promise.resolve({
          ok: false,
          error: { kind: "rejected", status: validateStatus, message: "404 page not found" },
        });
      const culprit = names.find(n => bad.has(n));
      return Promise.resolve({
        ok: true,
        value: culprit
          ? { accepted: false, message: `route ${culprit} is bad` }
          : { accepted: true },
      });
    },
    onChange: () => changes.push(1),
    log: () => undefined,
  });
  /** The plan a build would make now. */
  const plan = (): GatedPlan => {
    const config = sealed(configOf(GW, isolation.refused()).candidates.map(o => o.name));
    const targets: Target[] = [{ endpoint, config }];
    return { key: GW, targets, desiredHash: config.hash, configProblem: undefined };
  };
  return { isolation, plan, changes, validations };
}

const refusedBy = (hash: string, message = "route bad is bad"): FleetEvent => ({
  type: "failed",
  name: endpoint.name,
  hash,
  error: { kind: "rejected", status: 400, message },
  attempts: 1,
  retryInMs: 1000,
});
const pushed = (hash: string): FleetEvent => ({
  type: "pushed",
  name: endpoint.name,
  hash,
  durationMs: 5,
});

describe("Isolation", () => {
  it("finds the refused objects, leaves them out, and never pushes the refused config again", async () => {
    const { isolation, plan, changes, validations } = setup(
      [route("a"), route("bad"), route("c"), route("worse")],
      new Set(["bad", "worse"]),
    );
    // the proxies run a good config first
    const first = sealed(["a"]);
    isolation.gate({
      key: GW,
      targets: [{ endpoint, config: first }],
      desiredHash: first.hash,
      configProblem: undefined,
    });
    isolation.observe(pushed(first.hash), GW, endpoint);

    const full = plan();
    expect(isolation.gate(full)).toBe(full);
    isolation.observe(refusedBy(full.desiredHash!), GW, endpoint);
    await isolation.idle();
    // the refused config is never pushed again: the last accepted one, and the Gateway says why
    const held = isolation.gate(full);
    expect(held.targets.map(t => t.config.hash)).toEqual([first.hash]);
    expect(held.configProblem).toBe("the proxies refused the configuration: route bad is bad");

    expect(
      isolation
        .refused()
        .map(r => [identityOf(r), r.reason, r.gateway])
        .sort(),
    ).toEqual([
      ["HTTPRoute/default/bad", "route bad is bad", GW],
      ["HTTPRoute/default/worse", "route worse is bad", GW],
    ]);
    expect(changes).toHaveLength(1);
    expect(validations.length).toBeLessThanOrEqual(2 * 3 + 2);
    const next = plan();
    expect(next.desiredHash).not.toBe(full.desiredHash);
    expect(isolation.gate(next)).toBe(next);
    // the refused config stays refused: a second proxy's refusal starts no new search
    const before = validations.length;
    isolation.observe(refusedBy(full.desiredHash!), GW, endpoint);
    await isolation.idle();
    expect(validations.length).toBe(before);
  });

  it("drops refusals of deleted objects and of Gateways that are gone", async () => {
    const { isolation, plan } = setup([route("a"), route("bad")], new Set(["bad"]));
    isolation.observe(refusedBy(plan().desiredHash!), GW, endpoint);
    await isolation.idle();
    expect(isolation.refused()).toHaveLength(1);
    isolation.retain(new Set([GW]), () => true);
    expect(isolation.refused()).toHaveLength(1);
    isolation.retain(new Set([GW]), r => r.name !== "bad");
    expect(isolation.refused()).toHaveLength(0);
  });

  it("changes nothing when the proxy cannot validate (stock Caddy: 404)", async () => {
    const { isolation, plan, validations } = setup(
      [route("a"), route("bad")],
      new Set(["bad"]),
      404,
    );
    const full = plan();
    isolation.observe(refusedBy(full.desiredHash!), GW, endpoint);
    await isolation.idle();
    expect(validations).toHaveLength(1);
    expect(isolation.refused()).toEqual([]);
    const p = plan();
    expect(isolation.gate(p)).toBe(p); // pushed (and retried) as before
  });

  it("blames nothing when validation accepts the refused config (e.g. a port in use at start)", async () => {
    const { isolation, plan, changes } = setup([route("a"), route("b")], new Set());
    const p = plan();
    isolation.observe(
      refusedBy(p.desiredHash!, "listen tcp :443: address already in use"),
      GW,
      endpoint,
    );
    await isolation.idle();
    expect(isolation.refused()).toEqual([]);
    expect(changes).toEqual([]);
    expect(isolation.gate(p)).toBe(p);
  });

  it("reports the Gateway when its config is refused with every object left out", async () => {
    const { isolation, plan } = setup([route("a")], new Set(["a", ""]));
    // configs are refused whatever they hold
    const always = new Isolation({
      configOf: () => ({ ...sealed([]), candidates: [route("a")] }),
      validate: () =>
        Promise.resolve({ ok: true, value: { accepted: false, message: "listener :80: bad" } }),
      onChange: () => undefined,
      log: () => undefined,
    });
    always.observe(refusedBy(plan().desiredHash!, "listener :80: bad"), GW, endpoint);
    await always.idle();
    expect(always.refused()).toEqual([]);
    const gated = always.gate(plan());
    // no config was ever accepted: nothing new to push
    expect(gated.targets).toEqual([]);
    expect(gated.configProblem).toBe(
      "the proxies refused the configuration (also with every route, ListenerSet and listener left out): listener :80: bad",
    );
    expect(isolation.refused()).toEqual([]);
  });

  it("ignores failures that are not refusals", () => {
    const { isolation, plan, changes } = setup([route("a")], new Set());
    const p = plan();
    isolation.observe(
      {
        ...refusedBy(p.desiredHash!),
        error: { kind: "connect", message: "refused" },
      } as FleetEvent,
      GW,
      endpoint,
    );
    isolation.observe(
      {
        ...refusedBy(p.desiredHash!),
        error: { kind: "rejected", status: 500, message: "x" },
      } as FleetEvent,
      GW,
      endpoint,
    );
    expect(changes).toEqual([]);
    expect(isolation.gate(p)).toBe(p);
  });
});

/**
 * Tracing refusals through the source map: the fake proxy's config is a list of routes, one
 * server route each, and it refuses the first bad one with Caddy's words for its index.
 */
describe("Isolation with a source map", () => {
  const caddyError = (i: number) =>
    `loading config: loading new config: loading http app module: provision http: server http-80: setting up route handlers: route ${i}: loading handler modules: position 0: bad`;
  /** Undefined: the proxy loads `names`; else its error. */
  const refusal = (names: readonly string[], bad: ReadonlySet<string>) => {
    const i = names.findIndex(n => bad.has(n));
    return i < 0 ? undefined : caddyError(i);
  };

  function traced(objects: RefusableObject[], bad: ReadonlySet<string>, validates: boolean) {
    const validations: string[][] = [];
    const configOf = (_gw: string, refused: readonly RefusedObject[]) => {
      const out = new Set(refused.map(identityOf));
      const kept = objects.filter(o => !out.has(identityOf(o)));
      const sources = new Map(
        kept.map((o, i) => [
          `/http/servers/http-80/routes/${i}`,
          [{ ...o, fingerprint: undefined }],
        ]),
      );
      return { ...sealed(kept.map(o => o.name)), candidates: kept, sources, validates };
    };
    const isolation = new Isolation({
      configOf,
      validate: (_e, bytes) => {
        const names = JSON.parse(bytes.toString()) as string[];
        validations.push(names);
        const message = refusal(names, bad);
        return Promise.resolve({
          ok: true,
          value: message ? { accepted: false, message } : { accepted: true },
        });
      },
      onChange: () => undefined,
      log: () => undefined,
    });
    /** Pushes what a build would push until the proxy accepts it; the hashes pushed. */
    const converge = async (max = 40): Promise<string[]> => {
      const pushes: string[] = [];
      for (let i = 0; i < max; i++) {
        const config = sealed(configOf(GW, isolation.refused()).candidates.map(o => o.name));
        const gated = isolation.gate({
          key: GW,
          targets: [{ endpoint, config }],
          desiredHash: config.hash,
          configProblem: undefined,
        });
        if (gated.targets.length === 0) return pushes;
        const pushedConfig = gated.targets[0].config;
        pushes.push(pushedConfig.hash);
        const message = refusal(JSON.parse(pushedConfig.bytes.toString()) as string[], bad);
        if (!message) {
          isolation.observe(pushed(pushedConfig.hash), GW, endpoint);
          if (pushedConfig.hash === config.hash) return pushes;
        } else isolation.observe(refusedBy(pushedConfig.hash, message), GW, endpoint);
        await isolation.idle();
      }
      return pushes;
    };
    return { isolation, configOf, converge, validations };
  }

  const names = (n: number, badEvery: number) =>
    Array.from({ length: n }, (_, i) => route(i % badEvery === 1 ? `bad-${i}` : `ok-${i}`));

  it("stock proxies (no validation): traces each refusal to its route and pushes the rest", async () => {
    const objects = names(9, 3); // bad-1, bad-4, bad-7
    const bad = new Set(objects.filter(o => o.name.startsWith("bad")).map(o => o.name));
    const { isolation, converge, validations } = traced(objects, bad, false);
    const pushes = await converge();
    expect(validations).toEqual([]);
    expect(isolation.refused().map(r => r.name)).toEqual(["bad-1", "bad-4", "bad-7"]);
    // each refused object carries the error that named it, verbatim
    expect(isolation.refused().map(r => r.reason)).toEqual([
      caddyError(1),
      caddyError(3),
      caddyError(5),
    ]);
    // one push per culprit, then the accepted one; no config pushed twice
    expect(pushes).toHaveLength(4);
    expect(new Set(pushes).size).toBe(pushes.length);
  });

  it("stock proxies: an error naming no object stays the Gateway's", async () => {
    const { isolation, configOf } = traced([route("a"), route("b")], new Set(), false);
    const config = configOf(GW, []);
    isolation.observe(
      refusedBy(
        config.hash,
        "loading http app module: provision http: server http-80, listener 0: bind: address already in use",
      ),
      GW,
      endpoint,
    );
    await isolation.idle();
    expect(isolation.refused()).toEqual([]);
    const plan = {
      key: GW,
      targets: [{ endpoint, config }],
      desiredHash: config.hash,
      configProblem: undefined,
    };
    expect(isolation.gate(plan)).toBe(plan); // pushed again (the push engine retries)
  });

  it(`stock proxies: stops tracing after ${MAX_TRACES} refusals in a row`, async () => {
    const objects = names(3 * (MAX_TRACES + 4), 3);
    const bad = new Set(objects.filter(o => o.name.startsWith("bad")).map(o => o.name));
    const { isolation, converge } = traced(objects, bad, false);
    await converge(3 * MAX_TRACES);
    expect(isolation.refused()).toHaveLength(MAX_TRACES);
  });

  it("Bundled: confirms the traced routes with one validation each, no bisection", async () => {
    const objects = names(30, 10); // bad-1, bad-11, bad-21
    const bad = new Set(objects.filter(o => o.name.startsWith("bad")).map(o => o.name));
    const { isolation, converge, validations } = traced(objects, bad, true);
    const pushes = await converge();
    expect(isolation.refused().map(r => r.name)).toEqual(["bad-1", "bad-11", "bad-21"]);
    // the first refusal is traced, the config without it validated and refused again (traced),
    // and so on: one validation per culprit
    expect(validations).toHaveLength(3);
    expect(pushes).toHaveLength(2);
  });
});
