/**
 * The start-up managed proxy pods rely on for the last known good config (workload/pod.ts):
 * `caddy run --config <bootstrap> --resume` starts from `$XDG_CONFIG_HOME/caddy/autosave.json`
 * when the file exists and from the bootstrap when it does not, on every proxy build a class
 * can name: our Bundled build (Caddy 2.11.9) and Caddy 2.8.4 (the stand-in for Kengine). Real
 * Caddy processes on loopback.
 */
import { CONFIG_ID_PREFIX } from "../../capabilities/caddy";
import { startCaddy } from "../support/caddy";
import { freePort } from "../support/ports";
import { get } from "../support/traffic";

const HASH = "0123456789abcdef";

describe.each(["caddy", "caddy-2.8"] as const)("caddy run --resume on peer %s", peer => {
  it("starts from the stored config when the file is there: its server answers, its @id is the hash", async () => {
    const port = await freePort("127.0.0.1");
    const caddy = await startCaddy({
      name: "resume",
      peer,
      resume: {
        autosave: admin =>
          JSON.stringify({
            admin: { listen: admin, config: { persist: false } },
            apps: {
              http: {
                servers: {
                  stored: {
                    "@id": `${CONFIG_ID_PREFIX}${HASH}`,
                    listen: [`127.0.0.1:${port}`],
                    automatic_https: { disable: true },
                    routes: [
                      { handle: [{ handler: "static_response", status_code: 200, body: "lkg" }] },
                    ],
                  },
                },
              },
            },
          }),
      },
    });
    try {
      expect((await caddy.admin("GET", `/id/${CONFIG_ID_PREFIX}${HASH}`)).status).toBe(200);
      const reply = await get("127.0.0.1", "any.local", "/", port);
      expect([reply.status, reply.body]).toEqual([200, "lkg"]);
      expect(caddy.log()).toContain("resuming from last configuration");
    } finally {
      await caddy.stop();
    }
  });

  it("starts from the bootstrap (--config) when there is no stored config", async () => {
    const caddy = await startCaddy({ name: "resume", peer, resume: {} });
    try {
      expect((await caddy.admin("GET", `/id/${CONFIG_ID_PREFIX}${HASH}`)).status).toBe(404);
      const config = await caddy.admin("GET", "/config/");
      expect(JSON.parse(config.text)).toEqual({
        admin: { listen: caddy.adminAddress, config: { persist: false } },
      });
      expect(caddy.log()).toContain("no autosave file exists");
    } finally {
      await caddy.stop();
    }
  });
});
