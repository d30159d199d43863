import type { KubeClient } from "../kube/client";
import { AdminCa } from "./admin-ca";
import { ROTATE_CA_ANNOTATION } from "./rotation";

interface Secret {
  metadata: { resourceVersion: string; annotations?: Record<string, string | null> };
  data: Record<string, string | null>;
}

/** One Secret in memory: GET, POST (create from stringData), PATCH (JSON merge). */
function fakeKube(): { kube: KubeClient; secret: () => Secret | undefined } {
  let secret: Secret | undefined;
  let version = 0;
  const request = async (method: string, _path: string, body?: unknown): Promise<unknown> => {
    if (method === "GET") {
      if (!secret) throw Object.assign(new Error("not found"), { status: 404 });
      return structuredClone(secret);
    }
    if (method === "POST") {
      const b = body as { stringData: Record<string, string> };
      secret = {
        metadata: { resourceVersion: String(++version) },
        data: Object.fromEntries(
          Object.entries(b.stringData).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
        ),
      };
      return secret;
    }
    const patch = body as { metadata: Secret["metadata"]; data: Secret["data"] };
    if (patch.metadata.resourceVersion !== secret!.metadata.resourceVersion)
      throw Object.assign(new Error("conflict"), { status: 409 });
    const merge = (a: Record<string, string | null>, b: Record<string, string | null>) =>
      Object.fromEntries(Object.entries({ ...a, ...b }).filter(([, v]) => v !== null));
    secret = {
      metadata: {
        resourceVersion: String(++version),
        annotations: merge(secret!.metadata.annotations ?? {}, patch.metadata.annotations ?? {}),
      },
      data: merge(secret!.data, patch.data),
    };
    return secret;
  };
  return { kube: { request } as unknown as KubeClient, secret: () => secret };
}

const quiet = { info: () => {}, warn: () => {} };

describe("AdminCa", () => {
  it("creates the CA Secret when missing and issues client credentials trusting it", async () => {
    const { kube, secret } = fakeKube();
    const ca = new AdminCa({
      kube,
      namespace: "ns",
      identity: "replica-1",
      log: quiet,
      onCredentials: () => {},
      onChange: () => {},
    });
    const signing = await ca.load();
    expect(secret()?.data["tls.crt"]).toBeDefined();
    expect(ca.trusted).toEqual([signing.certificatePem]);
    const own = ca.issue();
    expect(own.caPem).toContain(signing.certificatePem.trim());
    expect(ca.renewIfDue()).toBe(false);
  });

  it("a requested rotation asks for a build, then introduces a second trusted CA and new credentials", async () => {
    const { kube, secret } = fakeKube();
    const credentials: string[] = [];
    let changes = 0;
    const ca = new AdminCa({
      kube,
      namespace: "ns",
      identity: "replica-1",
      log: quiet,
      onCredentials: c => credentials.push(c.certificatePem),
      onChange: () => changes++,
    });
    await ca.load();
    ca.issue();
    secret()!.metadata.annotations = { [ROTATE_CA_ANNOTATION]: "now" };
    await ca.refresh();
    expect(changes).toBe(1);
    expect(ca.read?.requested).toBe(true);
    await ca.step(ca.read!, true, 2);
    expect(ca.trusted).toHaveLength(2);
    expect(credentials).toHaveLength(1);
    expect(changes).toBe(2);
    ca.stop();
  });
});
