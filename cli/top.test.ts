import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "./args";
import { main } from "./main";
import { formatTop, requestSamples, topReport } from "./top";

const M = "kengine_gateway_proxy_http_requests_total";
const text = (lines: [string, string, string, number][]) =>
  [
    "# HELP pepr_x something of Pepr's",
    "pepr_x 3",
    `# TYPE ${M} counter`,
    ...lines.map(
      ([gateway, route, code, v]) =>
        `${M}{gateway="${gateway}",route="${route}",server="http-80",code="${code}"} ${v}`,
    ),
  ].join("\n");

describe("top", () => {
  const before = requestSamples(
    text([
      ["shop/gw", "shop/web", "200", 100],
      ["shop/gw", "shop/web", "503", 10],
      ["shop/gw", "shop/api", "200", 50],
    ]),
  );
  const after = requestSamples(
    text([
      ["shop/gw", "shop/web", "200", 180],
      ["shop/gw", "shop/web", "503", 30],
      ["shop/gw", "shop/api", "200", 5], // went down: the controller restarted, 5 since
      ["shop/gw", "", "404", 4],
    ]),
  );

  it("per route: the increase over the window, 5xx share, busiest first", () => {
    expect(topReport(before, after, 10).rows).toEqual([
      {
        gateway: "shop/gw",
        route: "shop/web",
        requests: 100,
        perSecond: 10,
        errors5xx: 20,
        errorShare: 0.2,
      },
      {
        gateway: "shop/gw",
        route: "shop/api",
        requests: 5,
        perSecond: 0.5,
        errors5xx: 0,
        errorShare: 0,
      },
      {
        gateway: "shop/gw",
        route: "<no single route>",
        requests: 4,
        perSecond: 0.4,
        errors5xx: 0,
        errorShare: 0,
      },
    ]);
  });

  it("per Gateway, and as a table", () => {
    const r = topReport(before, after, 10, "gateways");
    expect(r.rows).toEqual([
      { gateway: "shop/gw", requests: 109, perSecond: 10.9, errors5xx: 20, errorShare: 20 / 109 },
    ]);
    expect(formatTop(r, false).split("\n").slice(0, 2)).toEqual([
      "GATEWAY   REQ/S   REQUESTS   5XX   5XX%",
      "shop/gw   10.9    109        20    18.3%",
    ]);
  });

  it("reads --window", () => {
    expect(parseArgs(["top", "--window", "1m"])).toMatchObject({ windowSeconds: 60 });
    expect(parseArgs(["top", "--window", "soon"])).toMatch(/--window/);
  });

  it("scrapes a /metrics URL twice, the window apart", async () => {
    let n = 0;
    const server = createServer((_, res) => {
      n++;
      res.end(text([["shop/gw", "shop/web", "200", n === 1 ? 10 : 13]]));
    });
    await new Promise<void>(r => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
    let out = "";
    const write = jest
      .spyOn(process.stdout, "write")
      .mockImplementation(t => ((out += String(t)), true));
    let said = "";
    const err = jest
      .spyOn(process.stderr, "write")
      .mockImplementation(t => ((said += String(t)), true));
    try {
      const code = await main(["top", "--metrics-url", url, "--window", "1s", "-o", "json"]);
      expect(code).toBe(0);
    } finally {
      write.mockRestore();
      err.mockRestore();
      server.close();
    }
    expect(n).toBe(2);
    // a window shorter than the controller's 15 s read may hold no reading: it says so
    expect(said).toMatch(/reads the proxies every 15 s/);
    expect(JSON.parse(out).rows).toEqual([
      {
        gateway: "shop/gw",
        route: "shop/web",
        requests: 3,
        perSecond: 3,
        errors5xx: 0,
        errorShare: 0,
      },
    ]);
  });
});
