import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { safeJoin, tokenRequests, volumeFiles, writeVolume } from "./volumes";
import type { ConfigMap, Pod, Secret } from "./types";

const pod: Pod = {
  metadata: { name: "p", namespace: "n", uid: "u" },
  spec: {
    containers: [{ name: "c" }],
    volumes: [
      {
        name: "kube-api-access-x",
        projected: {
          sources: [
            { serviceAccountToken: { path: "token", expirationSeconds: 3607 } },
            { configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }] } },
            {
              downwardAPI: {
                items: [{ path: "namespace", fieldRef: { fieldPath: "metadata.namespace" } }],
              },
            },
          ],
        },
      },
    ],
  },
};
const src = {
  configMaps: new Map<string, ConfigMap>([
    ["kube-root-ca.crt", { metadata: { name: "kube-root-ca.crt" }, data: { "ca.crt": "PEM" } }],
    [
      "cfg",
      {
        metadata: { name: "cfg" },
        data: { a: "1", b: "2" },
        binaryData: { bin: Buffer.from([1, 2]).toString("base64") },
      },
    ],
  ]),
  secrets: new Map<string, Secret>([
    ["s", { metadata: { name: "s" }, data: { k: Buffer.from("secret").toString("base64") } }],
  ]),
  tokens: new Map([["kube-api-access-x/token", "jwt"]]),
  podIP: "10.244.0.5",
  hostIP: "10.244.0.1",
};
const text = (r: ReturnType<typeof volumeFiles>) =>
  r.ok ? Object.fromEntries(r.files.map(f => [f.path, f.content.toString("utf8")])) : r.message;

describe("volumeFiles", () => {
  it("builds the projected ServiceAccount volume", () => {
    expect(text(volumeFiles(pod, pod.spec.volumes![0], src))).toEqual({
      token: "jwt",
      "ca.crt": "PEM",
      namespace: "n",
    });
    expect(tokenRequests(pod)).toEqual([
      { key: "kube-api-access-x/token", audience: undefined, expirationSeconds: 3607 },
    ]);
  });

  it("writes every key of a configMap or secret, or the listed items with their modes", () => {
    expect(text(volumeFiles(pod, { name: "v", configMap: { name: "cfg" } }, src))).toEqual({
      a: "1",
      b: "2",
      bin: "\u0001\u0002",
    });
    const items = volumeFiles(
      pod,
      {
        name: "v",
        configMap: { name: "cfg", items: [{ key: "b", path: "x/b.txt", mode: 0o600 }] },
      },
      src,
    );
    expect(items).toEqual({
      ok: true,
      kind: "dir",
      files: [{ path: "x/b.txt", content: Buffer.from("2"), mode: 0o600 }],
    });
    expect(text(volumeFiles(pod, { name: "v", secret: { secretName: "s" } }, src))).toEqual({
      k: "secret",
    });
  });

  it("reports missing objects unless optional, and unsupported volume types", () => {
    expect(volumeFiles(pod, { name: "v", configMap: { name: "nope" } }, src)).toMatchObject({
      ok: false,
    });
    expect(
      volumeFiles(pod, { name: "v", configMap: { name: "nope", optional: true } }, src),
    ).toMatchObject({ ok: true });
    expect(
      volumeFiles(
        pod,
        { name: "v", secret: { secretName: "s", items: [{ key: "zz", path: "z" }] } },
        src,
      ),
    ).toMatchObject({
      ok: false,
    });
    // optional: a listed key the object lacks is left out (the kubelet's MakePayload), the
    // keys it has are still written
    expect(
      volumeFiles(
        pod,
        {
          name: "v",
          secret: {
            secretName: "s",
            optional: true,
            items: [
              { key: "zz", path: "z" },
              { key: "k", path: "k" },
            ],
          },
        },
        src,
      ),
    ).toMatchObject({ ok: true, files: [{ path: "k" }] });
    expect(
      volumeFiles(
        pod,
        {
          name: "v",
          configMap: { name: "cfg", optional: true, items: [{ key: "zz", path: "z" }] },
        },
        src,
      ),
    ).toEqual({ ok: true, kind: "dir", files: [] });
    expect(volumeFiles(pod, { name: "hp" } as never, src)).toMatchObject({ ok: false });
    expect(volumeFiles(pod, { name: "e", emptyDir: {} }, src)).toEqual({
      ok: true,
      kind: "dir",
      files: [],
    });
  });
});

describe("safeJoin", () => {
  it("keeps paths inside the volume", () => {
    expect(safeJoin("/v", "a/b")).toBe("/v/a/b");
    expect(safeJoin("/v", "../etc/passwd")).toBeUndefined();
    expect(safeJoin("/v", "a/../../x")).toBeUndefined();
  });
});

describe("writeVolume", () => {
  it("rewrites changed files only and drops keys that went away", () => {
    const dir = mkdtempSync(`${tmpdir()}/kg-vol-`);
    try {
      const f = (path: string, content: string) => ({
        path,
        content: Buffer.from(content),
        mode: 0o644,
      });
      const first = writeVolume(dir, [f("a", "1"), f("sub/b", "2")]);
      expect([...first].sort()).toEqual(["a", "sub/b"]);
      const mtime = statSync(`${dir}/a`).mtimeMs;
      const second = writeVolume(dir, [f("a", "1"), f("c", "3")], first);
      expect(statSync(`${dir}/a`).mtimeMs).toBe(mtime);
      expect(existsSync(`${dir}/sub/b`)).toBe(false);
      expect(readFileSync(`${dir}/c`, "utf8")).toBe("3");
      expect([...second].sort()).toEqual(["a", "c"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
