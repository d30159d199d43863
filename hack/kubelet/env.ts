/** A container's environment: env and envFrom, with downward-API fieldRefs resolved (pure). */
import type { ConfigMap, Container, Pod, Secret } from "./types";

export interface EnvSources {
  readonly configMaps: ReadonlyMap<string, ConfigMap>;
  readonly secrets: ReadonlyMap<string, Secret>;
  readonly podIP: string;
  readonly hostIP: string;
}

export type EnvResult =
  | { readonly ok: true; readonly env: Record<string, string> }
  | { readonly ok: false; readonly message: string };

/** The value of a downward-API fieldPath, or undefined if the kubelet does not support it. */
export function fieldValue(
  pod: Pod,
  fieldPath: string,
  podIP: string,
  hostIP: string,
): string | undefined {
  const m = fieldPath.match(/^metadata\.(labels|annotations)\['(.+)'\]$/);
  if (m) {
    const map = m[1] === "labels" ? pod.metadata.labels : pod.metadata.annotations;
    return map?.[m[2]] ?? "";
  }
  switch (fieldPath) {
    case "metadata.name":
      return pod.metadata.name;
    case "metadata.namespace":
      return pod.metadata.namespace ?? "default";
    case "metadata.uid":
      return pod.metadata.uid ?? "";
    case "spec.nodeName":
      return pod.spec.nodeName ?? "";
    case "spec.serviceAccountName":
      return pod.spec.serviceAccountName ?? "default";
    case "status.podIP":
    case "status.podIPs":
      return podIP;
    case "status.hostIP":
    case "status.hostIPs":
      return hostIP;
    default:
      return undefined;
  }
}

/** Expands $(VAR) references to earlier variables like the kubelet does; $$(VAR) escapes. */
export function expandRefs(s: string, env: Readonly<Record<string, string>>): string {
  return s.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (all, name?: string) => {
    if (all === "$$") return "$";
    return name !== undefined && name in env ? env[name] : all;
  });
}

const decode = (b64: string): string => Buffer.from(b64, "base64").toString("utf8");

export function containerEnv(pod: Pod, c: Container, src: EnvSources): EnvResult {
  const env: Record<string, string> = {};
  for (const from of c.envFrom ?? []) {
    const prefix = from.prefix ?? "";
    if (from.configMapRef) {
      const cm = src.configMaps.get(from.configMapRef.name);
      if (!cm) {
        if (from.configMapRef.optional) continue;
        return { ok: false, message: `configmap "${from.configMapRef.name}" not found` };
      }
      for (const [k, v] of Object.entries(cm.data ?? {})) env[prefix + k] = v;
    }
    if (from.secretRef) {
      const s = src.secrets.get(from.secretRef.name);
      if (!s) {
        if (from.secretRef.optional) continue;
        return { ok: false, message: `secret "${from.secretRef.name}" not found` };
      }
      for (const [k, v] of Object.entries(s.data ?? {})) env[prefix + k] = decode(v);
    }
  }
  for (const e of c.env ?? []) {
    const vf = e.valueFrom;
    if (!vf) {
      env[e.name] = expandRefs(e.value ?? "", env);
    } else if (vf.fieldRef) {
      const v = fieldValue(pod, vf.fieldRef.fieldPath, src.podIP, src.hostIP);
      if (v === undefined)
        return { ok: false, message: `unsupported fieldPath "${vf.fieldRef.fieldPath}"` };
      env[e.name] = v;
    } else if (vf.configMapKeyRef) {
      const ref = vf.configMapKeyRef;
      const v = src.configMaps.get(ref.name)?.data?.[ref.key];
      if (v === undefined) {
        if (ref.optional) continue;
        return {
          ok: false,
          message: `couldn't find key ${ref.key} in ConfigMap ${pod.metadata.namespace}/${ref.name}`,
        };
      }
      env[e.name] = v;
    } else if (vf.secretKeyRef) {
      const ref = vf.secretKeyRef;
      const v = src.secrets.get(ref.name)?.data?.[ref.key];
      if (v === undefined) {
        if (ref.optional) continue;
        return {
          ok: false,
          message: `couldn't find key ${ref.key} in Secret ${pod.metadata.namespace}/${ref.name}`,
        };
      }
      env[e.name] = decode(v);
    } else if (vf.resourceFieldRef) {
      env[e.name] = "0";
    }
  }
  return { ok: true, env };
}

/** ConfigMap and Secret names a pod references (env, envFrom, volumes). */
export function referencedObjects(pod: Pod): { configMaps: Set<string>; secrets: Set<string> } {
  const configMaps = new Set<string>();
  const secrets = new Set<string>();
  for (const c of [...(pod.spec.initContainers ?? []), ...pod.spec.containers]) {
    for (const f of c.envFrom ?? []) {
      if (f.configMapRef) configMaps.add(f.configMapRef.name);
      if (f.secretRef) secrets.add(f.secretRef.name);
    }
    for (const e of c.env ?? []) {
      if (e.valueFrom?.configMapKeyRef) configMaps.add(e.valueFrom.configMapKeyRef.name);
      if (e.valueFrom?.secretKeyRef) secrets.add(e.valueFrom.secretKeyRef.name);
    }
  }
  for (const v of pod.spec.volumes ?? []) {
    if (v.configMap) configMaps.add(v.configMap.name);
    if (v.secret) secrets.add(v.secret.secretName);
    for (const s of v.projected?.sources ?? []) {
      if (s.configMap) configMaps.add(s.configMap.name);
      if (s.secret) secrets.add(s.secret.name);
    }
  }
  return { configMaps, secrets };
}
