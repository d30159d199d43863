import { createServer, Server, ServerResponse } from "node:http";
import { Api, Informer, KubeObject } from "./api";

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
const obj = (name: string, rv: string): KubeObject => ({
  metadata: { name, namespace: "n", resourceVersion: rv },
});

describe("Informer (against an in-process fake API server)", () => {
  let server: Server;
  let api: Api;
  const watchRVs: string[] = [];
  let lists = 0;
  const open: ServerResponse[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      res.setHeader("content-type", "application/json");
      if (url.searchParams.get("watch") !== "1") {
        lists++;
        const body =
          lists === 1
            ? { metadata: { resourceVersion: "10" }, items: [obj("a", "5"), obj("b", "6")] }
            : { metadata: { resourceVersion: "21" }, items: [obj("a", "20")] };
        res.end(JSON.stringify(body));
        return;
      }
      const rv = url.searchParams.get("resourceVersion") ?? "";
      watchRVs.push(rv);
      const ev = (type: string, object: unknown) =>
        res.write(JSON.stringify({ type, object }) + "\n");
      if (watchRVs.length === 1) {
        ev("ADDED", obj("c", "11"));
        ev("MODIFIED", obj("a", "12"));
        ev("BOOKMARK", { metadata: { resourceVersion: "13" } });
        res.end(); // a dropped connection: resume from 13
      } else if (watchRVs.length === 2) {
        ev("ERROR", { kind: "Status", code: 410, message: "too old resource version" });
        res.end(); // 410 Gone: relist
      } else {
        open.push(res); // stay open
      }
    });
    await new Promise<void>(r => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as { port: number }).port;
    api = new Api(
      {
        server: `http://127.0.0.1:${port}`,
        ca: Buffer.alloc(0),
        cert: Buffer.alloc(0),
        key: Buffer.alloc(0),
        user: "t",
      },
      quiet,
    );
  });

  afterAll(async () => {
    open.forEach(r => r.end());
    api.close();
    await new Promise(r => server.close(r));
  });

  it("lists, watches, resumes from the last resourceVersion and relists on 410", async () => {
    const seen: string[] = [];
    let inf: Informer<KubeObject> | undefined;
    const done = new Promise<void>(resolve => {
      inf = api.inform<KubeObject>("/api/v1/pods", (key, o) => {
        seen.push(`${key}@${o?.metadata.resourceVersion ?? "deleted"}`);
      });
      const poll = setInterval(() => {
        if (watchRVs.length >= 3) {
          clearInterval(poll);
          resolve();
        }
      }, 10);
    });
    await done;
    inf!.stop();
    expect(watchRVs).toEqual(["10", "13", "21"]);
    expect(seen).toEqual([
      "n/a@5",
      "n/b@6",
      "n/c@11",
      "n/a@12",
      // relist after 410: a updated, b and c gone
      "n/a@20",
      "n/b@deleted",
      "n/c@deleted",
    ]);
    expect([...inf!.cache.keys()]).toEqual(["n/a"]);
  });
});
