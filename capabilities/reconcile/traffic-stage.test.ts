/**
 * The traffic stage with a fake admin channel: the proxies of the last push are read, their
 * requests summed by the route whose hostname they asked for; followers read nothing; an
 * unreachable proxy is skipped.
 */
import type { Target } from "../proxies";
import { KubeObject, snapshotOf } from "../snapshot";
import { TrafficStage } from "./traffic-stage";

const target = (pod: string): Target =>
  ({ endpoint: { name: `apps/${pod}` }, config: { hash: "h" } }) as unknown as Target;

const snapshot = snapshotOf([
  {
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "HTTPRoute",
    metadata: { namespace: "apps", name: "shop" },
    spec: { hostnames: ["shop.example"], parentRefs: [{ name: "edge" }] },
  },
] as unknown as KubeObject[]);

const text = (n: number) =>
  [
    "caddy_config_last_reload_success_timestamp_seconds 100",
    `caddy_http_request_duration_seconds_count{code="200",handler="subroute",host="shop.example",method="GET",server="http-80"} ${n}`,
  ].join("\n");

function setup() {
  const served = new Map<string, number>([["apps/p-a", 3]]);
  const read: string[] = [];
  const admin = {
    metrics: async (endpoint: { name: string }) => {
      read.push(endpoint.name);
      const n = served.get(endpoint.name);
      return n === undefined
        ? ({ ok: false, error: { kind: "connect", message: "refused" } } as const)
        : ({ ok: true, value: text(n) } as const);
    },
  };
  const stage = new TrafficStage({ debug() {} });
  stage.follow([
    { gateway: "apps/edge", target: target("p-a") },
    { gateway: "apps/edge", target: target("p-gone") },
  ]);
  return { stage, admin, served, read };
}

const totals = (stage: TrafficStage) =>
  stage.totals
    .totals()
    .map(t => `${t.labels.gateway} ${t.labels.route} ${t.labels.code}=${t.value}`);

describe("traffic stage", () => {
  it("sums each proxy's new requests per Gateway and route", async () => {
    const { stage, admin, served, read } = setup();
    await stage.collect({ admin, snapshot, leader: true });
    expect(read).toEqual(["apps/p-a", "apps/p-gone"]);
    expect(totals(stage)).toEqual(["apps/edge apps/shop 200=3"]);
    served.set("apps/p-a", 5);
    await stage.collect({ admin, snapshot, leader: true });
    expect(totals(stage)).toEqual(["apps/edge apps/shop 200=5"]);
  });

  it("a follower reads no proxy", async () => {
    const { stage, admin, read } = setup();
    await stage.collect({ admin, snapshot, leader: false });
    expect(read).toEqual([]);
    expect(totals(stage)).toEqual([]);
  });
});
