/**
 * Volumes as per-pod directories under the state dir: emptyDir, configMap, secret,
 * downwardAPI and projected (incl. the ServiceAccount token kube-apiserver adds as
 * kube-api-access-*). Containers see them at their mountPath through bind mounts in a private
 * mount namespace (see runtime.ts).
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { fieldValue } from "./env";
import type { ConfigMap, DownwardAPIFile, KeyToPath, Pod, Secret, Volume } from "./types";

export interface VolumeFile {
  readonly path: string;
  readonly content: Buffer;
  readonly mode: number;
}

export interface VolumeSources {
  readonly configMaps: ReadonlyMap<string, ConfigMap>;
  readonly secrets: ReadonlyMap<string, Secret>;
  /** ServiceAccount tokens by "<volume>/<path>". */
  readonly tokens: ReadonlyMap<string, string>;
  readonly podIP: string;
  readonly hostIP: string;
}

export type VolumeResult =
  | { readonly ok: true; readonly kind: "dir"; readonly files: readonly VolumeFile[] }
  | { readonly ok: false; readonly message: string };

/**
 * The files of a configMap/secret source. A key named in `items` that the object lacks fails
 * the volume, unless the source is optional: then it is left out (as the kubelet's
 * MakePayload does).
 */
function keyed(
  data: Record<string, Buffer>,
  items: readonly KeyToPath[] | undefined,
  mode: number,
  optional = false,
): VolumeFile[] | string {
  if (!items) return Object.entries(data).map(([k, v]) => ({ path: k, content: v, mode }));
  const out: VolumeFile[] = [];
  for (const it of items) {
    const v = data[it.key];
    if (v === undefined && optional) continue;
    if (v === undefined) return `key "${it.key}" not found`;
    out.push({ path: it.path, content: v, mode: it.mode ?? mode });
  }
  return out;
}

const cmData = (cm: ConfigMap): Record<string, Buffer> => ({
  ...Object.fromEntries(Object.entries(cm.data ?? {}).map(([k, v]) => [k, Buffer.from(v)])),
  ...Object.fromEntries(
    Object.entries(cm.binaryData ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64")]),
  ),
});
const secretData = (s: Secret): Record<string, Buffer> =>
  Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64")]));

function downward(
  pod: Pod,
  items: readonly DownwardAPIFile[] | undefined,
  mode: number,
  src: VolumeSources,
) {
  const out: VolumeFile[] = [];
  for (const it of items ?? []) {
    if (!it.fieldRef) continue;
    const v = fieldValue(pod, it.fieldRef.fieldPath, src.podIP, src.hostIP) ?? "";
    out.push({ path: it.path, content: Buffer.from(v), mode: it.mode ?? mode });
  }
  return out;
}

/** The files a volume holds (pure). emptyDir holds none. */
export function volumeFiles(pod: Pod, v: Volume, src: VolumeSources): VolumeResult {
  const ns = pod.metadata.namespace;
  if (v.emptyDir) return { ok: true, kind: "dir", files: [] };
  if (v.configMap) {
    const cm = src.configMaps.get(v.configMap.name);
    if (!cm) {
      return v.configMap.optional
        ? { ok: true, kind: "dir", files: [] }
        : { ok: false, message: `configmap "${v.configMap.name}" not found` };
    }
    const files = keyed(
      cmData(cm),
      v.configMap.items,
      v.configMap.defaultMode ?? 0o644,
      v.configMap.optional,
    );
    return typeof files === "string"
      ? { ok: false, message: `configmap ${ns}/${v.configMap.name}: ${files}` }
      : { ok: true, kind: "dir", files };
  }
  if (v.secret) {
    const s = src.secrets.get(v.secret.secretName);
    if (!s) {
      return v.secret.optional
        ? { ok: true, kind: "dir", files: [] }
        : { ok: false, message: `secret "${v.secret.secretName}" not found` };
    }
    const files = keyed(
      secretData(s),
      v.secret.items,
      v.secret.defaultMode ?? 0o644,
      v.secret.optional,
    );
    return typeof files === "string"
      ? { ok: false, message: `secret ${ns}/${v.secret.secretName}: ${files}` }
      : { ok: true, kind: "dir", files };
  }
  if (v.downwardAPI)
    return { ok: true, kind: "dir", files: downward(pod, v.downwardAPI.items, 0o644, src) };
  if (v.projected) {
    const mode = v.projected.defaultMode ?? 0o644;
    const files: VolumeFile[] = [];
    for (const s of v.projected.sources ?? []) {
      if (s.serviceAccountToken) {
        const token = src.tokens.get(`${v.name}/${s.serviceAccountToken.path}`);
        // A token the API refused is left out rather than failing the pod.
        if (token !== undefined)
          files.push({ path: s.serviceAccountToken.path, content: Buffer.from(token), mode });
      }
      if (s.configMap) {
        const cm = src.configMaps.get(s.configMap.name);
        if (!cm) {
          if (s.configMap.optional) continue;
          return { ok: false, message: `configmap "${s.configMap.name}" not found` };
        }
        const f = keyed(cmData(cm), s.configMap.items, mode, s.configMap.optional);
        if (typeof f === "string")
          return { ok: false, message: `configmap ${ns}/${s.configMap.name}: ${f}` };
        files.push(...f);
      }
      if (s.secret) {
        const sec = src.secrets.get(s.secret.name);
        if (!sec) {
          if (s.secret.optional) continue;
          return { ok: false, message: `secret "${s.secret.name}" not found` };
        }
        const f = keyed(secretData(sec), s.secret.items, mode, s.secret.optional);
        if (typeof f === "string")
          return { ok: false, message: `secret ${ns}/${s.secret.name}: ${f}` };
        files.push(...f);
      }
      if (s.downwardAPI) files.push(...downward(pod, s.downwardAPI.items, mode, src));
    }
    return { ok: true, kind: "dir", files };
  }
  return {
    ok: false,
    message: `volume "${v.name}": unsupported volume type on the kengine-local node`,
  };
}

/** A path inside a volume must not escape it (pure). */
export function safeJoin(dir: string, rel: string): string | undefined {
  const p = normalize(join(dir, rel));
  return p === dir || p.startsWith(dir + "/") ? p : undefined;
}

/**
 * Writes a volume's files into dir (created if needed), touching only files whose content
 * changed, and removes files it wrote before (`previous`) that are no longer part of it.
 * Returns the paths it now holds.
 */
export function writeVolume(
  dir: string,
  files: readonly VolumeFile[],
  previous: ReadonlySet<string> = new Set(),
): Set<string> {
  mkdirSync(dir, { recursive: true });
  const now = new Set<string>();
  for (const f of files) {
    const p = safeJoin(dir, f.path);
    if (!p) throw new Error(`volume path "${f.path}" escapes the volume`);
    now.add(f.path);
    mkdirSync(dirname(p), { recursive: true });
    if (!existsSync(p) || !readFileSync(p).equals(f.content)) writeFileSync(p, f.content);
    chmodSync(p, f.mode & 0o777);
  }
  for (const old of previous) {
    const p = safeJoin(dir, old);
    if (p && !now.has(old)) rmSync(p, { force: true });
  }
  return now;
}

/** The ServiceAccount token requests a pod's projected volumes need (pure). */
export function tokenRequests(pod: Pod) {
  const out: { key: string; audience?: string; expirationSeconds: number }[] = [];
  for (const v of pod.spec.volumes ?? []) {
    for (const s of v.projected?.sources ?? []) {
      if (!s.serviceAccountToken) continue;
      out.push({
        key: `${v.name}/${s.serviceAccountToken.path}`,
        audience: s.serviceAccountToken.audience,
        expirationSeconds: s.serviceAccountToken.expirationSeconds ?? 3607,
      });
    }
  }
  return out;
}

export const exists = existsSync;
