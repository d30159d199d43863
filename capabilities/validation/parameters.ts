/**
 * Rules for our parameters resource, KengineParameters (gateway.kengine.io/v1alpha1): values
 * the controller could not turn into a running proxy fleet. The CRD (deploy/crds/) checks
 * types, enums and the replica range; the fields it keeps free-form (resources, tolerations,
 * affinity, label and annotation maps, the image) are where a typo would only surface later,
 * as a Deployment or Service the API server refuses while the Gateway waits for proxies.
 *
 * Admission refuses such an object; provisioning (provision/parameters.ts) calls the same
 * function, so parameters stored some other way make the GatewayClass or Gateway that
 * references them Accepted=False/InvalidParameters with the same problems (the spec's answer
 * to "the data within that resource is malformed").
 */
import { isIP } from "node:net";
import { Collector } from "./budget";
import { PROXY_FLAVORS } from "../flavor/proxy-flavor";
import { acmeParametersProblems } from "./acme";
import { FieldProblem, display, truncate } from "./regex";
import { allowOverridesShapeProblems } from "./overrides";
import { limitsProblems } from "./limits";
import { egressParametersProblems } from "./egress";

/** spec.proxy.replicas: the range the CRD declares too (a unit test keeps them equal). */
export const REPLICAS = { min: 0, max: 1000 } as const;

export interface KengineParametersLike {
  readonly spec?: {
    readonly proxy?: Readonly<Record<string, unknown>>;
    readonly service?: Readonly<Record<string, unknown>>;
    readonly addresses?: unknown;
    readonly allowGatewayOverrides?: unknown;
    readonly acme?: unknown;
    readonly limits?: unknown;
    readonly egress?: unknown;
  };
}

const isObject = (v: unknown): v is Readonly<Record<string, unknown>> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

const show = (v: unknown): string => truncate(display(v));

/** `at.key`, or `at["key"]` when the key is not a plain field name (kubectl's path style). */
const field = (at: string, key: string): string =>
  /^[A-Za-z][A-Za-z0-9]*$/.test(key)
    ? `${at}.${key}`
    : `${at}[${JSON.stringify(truncate(key, 48))}]`;

/* ------------------------------------------------------------------ Kubernetes name rules */

const DNS_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS_SUBDOMAIN = new RegExp(`^${DNS_LABEL}(\\.${DNS_LABEL})*$`);
/** The name part of a qualified name (label and annotation keys), at most 63 characters. */
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
/** A label value: empty, or at most 63 characters of the name alphabet. */
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** Why `key` is not a qualified name (`[prefix/]name`), or undefined when it is. */
export function qualifiedNameProblem(key: string): string | undefined {
  const slash = key.lastIndexOf("/");
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)))
    return "its prefix must be a lower-case DNS subdomain (e.g. example.com/name)";
  if (name.length === 0 || name.length > 63 || !QUALIFIED_NAME.test(name))
    return "must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, with an optional DNS-subdomain prefix";
  return undefined;
}

/* ------------------------------------------------------------------ quantities and images */

/** A Kubernetes resource quantity: a decimal number with an optional suffix (100m, 64Mi, 1e3). */
const QUANTITY = /^\+?(\d+(\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/;
const SUFFIX: Readonly<Record<string, number>> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** The value of a quantity (for comparisons), or undefined when it is not one. */
export function quantityValue(q: unknown): number | undefined {
  if (typeof q === "number") return Number.isFinite(q) && q >= 0 ? q : undefined;
  if (typeof q !== "string" || q.length > 64) return undefined;
  const m = QUANTITY.exec(q);
  if (!m) return undefined;
  const suffix = m[3] ?? "";
  const base = Number(m[1]);
  if (/^[eE]/.test(suffix)) return Number(`${m[1]}${suffix}`);
  return base * (SUFFIX[suffix] ?? 1);
}

/**
 * A container image reference as the container runtime parses it: [registry[:port]/]path
 * components of lower-case letters and digits joined by '.', '_', '__' or dashes, then an
 * optional :tag and/or @algorithm:digest.
 */
const COMPONENT = "[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*";
const REGISTRY =
  "(?:[A-Za-z0-9](?:[-A-Za-z0-9]*[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[-A-Za-z0-9]*[A-Za-z0-9])?)*|\\[[0-9A-Fa-f:]+\\])(?::[0-9]+)?";
const IMAGE = new RegExp(
  `^(?:${REGISTRY}/)?${COMPONENT}(?:/${COMPONENT})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@[a-z0-9]+(?:[+._-][a-z0-9]+)*:[0-9a-fA-F]{32,})?$`,
);

/* ------------------------------------------------------------------ the rules */

const TOLERATION_OPERATORS = ["Exists", "Equal"];
const TOLERATION_EFFECTS = ["", "NoSchedule", "PreferNoSchedule", "NoExecute"];
const AFFINITY_KEYS = ["nodeAffinity", "podAffinity", "podAntiAffinity"];
const RESOURCE_KEYS = ["requests", "limits", "claims"];

/** Every problem of a KengineParameters object (not just the first), within the budget. */
export function kengineParametersProblems(
  obj: KengineParametersLike,
  c = new Collector(),
): FieldProblem[] {
  const spec = obj?.spec;
  if (spec === undefined || spec === null) return c.problems();
  if (!isObject(spec)) {
    c.add([{ path: "spec", value: show(spec), message: "must be an object" }]);
    return c.problems();
  }
  const proxy = spec.proxy;
  if (proxy !== undefined) {
    if (!isObject(proxy))
      c.add([{ path: "spec.proxy", value: show(proxy), message: "must be an object" }]);
    else proxyProblems(c, proxy);
  }
  if (spec.addresses !== undefined) addressesProblems(c, spec.addresses);
  c.add(allowOverridesShapeProblems(spec.allowGatewayOverrides));
  c.add(acmeParametersProblems(spec.acme));
  c.add(limitsProblems(spec.limits));
  c.add(egressParametersProblems(spec.egress));
  const service = spec.service;
  if (service !== undefined) {
    if (!isObject(service))
      c.add([{ path: "spec.service", value: show(service), message: "must be an object" }]);
    else serviceProblems(c, service);
  }
  return c.problems();
}

function proxyProblems(c: Collector, p: Readonly<Record<string, unknown>>): void {
  const at = "spec.proxy";
  if (p.kind !== undefined && p.kind !== "Deployment" && p.kind !== "DaemonSet")
    c.add([
      { path: `${at}.kind`, value: show(p.kind), message: "accepted: Deployment, DaemonSet" },
    ]);
  if (
    p.flavor !== undefined &&
    (typeof p.flavor !== "string" || !(PROXY_FLAVORS as readonly string[]).includes(p.flavor))
  )
    c.add([
      {
        path: `${at}.flavor`,
        value: show(p.flavor),
        message: `accepted: ${PROXY_FLAVORS.join(", ")}`,
      },
    ]);
  if (p.replicas !== undefined) {
    const r = p.replicas;
    if (typeof r !== "number" || !Number.isInteger(r) || r < REPLICAS.min || r > REPLICAS.max)
      c.add([
        {
          path: `${at}.replicas`,
          value: show(r),
          message: `must be a whole number from ${REPLICAS.min} to ${REPLICAS.max}`,
        },
      ]);
  }
  if (p.image !== undefined && c.spend(`${at}.image`)) {
    if (typeof p.image !== "string" || p.image.length > 512 || !IMAGE.test(p.image))
      c.add([
        {
          path: `${at}.image`,
          value: show(p.image),
          message:
            "is not a container image reference: [registry/]name[:tag][@sha256:digest], name in lower case, no spaces",
        },
      ]);
  }
  if (p.command !== undefined) {
    const cmd = p.command;
    if (!Array.isArray(cmd) || cmd.length === 0)
      c.add([
        {
          path: `${at}.command`,
          value: show(cmd),
          message: "must be a non-empty list: the proxy binary and its first arguments",
        },
      ]);
    else
      cmd.forEach((s, i) => {
        if (c.spend(`${at}.command[${i}]`) && (typeof s !== "string" || s.length === 0))
          c.add([
            { path: `${at}.command[${i}]`, value: show(s), message: "must be a non-empty string" },
          ]);
      });
  }
  if (p.resources !== undefined) resourcesProblems(c, `${at}.resources`, p.resources);
  if (p.nodeSelector !== undefined) labelMap(c, `${at}.nodeSelector`, p.nodeSelector, true);
  if (p.tolerations !== undefined) tolerationsProblems(c, `${at}.tolerations`, p.tolerations);
  if (p.affinity !== undefined) {
    const a = p.affinity;
    if (!isObject(a))
      c.add([{ path: `${at}.affinity`, value: show(a), message: "must be an object" }]);
    else
      for (const k of Object.keys(a).slice(0, 16)) {
        if (!AFFINITY_KEYS.includes(k))
          c.add([
            {
              path: field(`${at}.affinity`, k),
              value: truncate(k),
              message: `is not a kind of affinity (accepted: ${AFFINITY_KEYS.join(", ")})`,
            },
          ]);
        else if (!isObject(a[k]))
          c.add([
            { path: field(`${at}.affinity`, k), value: show(a[k]), message: "must be an object" },
          ]);
      }
  }
}

function resourcesProblems(c: Collector, at: string, r: unknown): void {
  if (!isObject(r)) {
    c.add([{ path: at, value: show(r), message: "must be an object (requests, limits)" }]);
    return;
  }
  for (const k of Object.keys(r).slice(0, 16)) {
    if (!RESOURCE_KEYS.includes(k))
      c.add([
        {
          path: field(at, k),
          value: truncate(k),
          message: `is not a field of container resources (accepted: ${RESOURCE_KEYS.join(", ")})`,
        },
      ]);
  }
  const values: Record<"requests" | "limits", Record<string, number>> = {
    requests: {},
    limits: {},
  };
  for (const side of ["requests", "limits"] as const) {
    const m = r[side];
    if (m === undefined) continue;
    if (!isObject(m)) {
      c.add([{ path: `${at}.${side}`, value: show(m), message: "must be a map of quantities" }]);
      continue;
    }
    for (const [name, q] of Object.entries(m)) {
      const p = `${at}.${side}[${JSON.stringify(truncate(name, 48))}]`;
      if (!c.spend(p)) return;
      const why = qualifiedNameProblem(name);
      if (why) c.add([{ path: p, value: name, message: `is not a resource name: ${why}` }]);
      const v = quantityValue(q);
      if (v === undefined)
        c.add([
          {
            path: p,
            value: show(q),
            message:
              "is not a quantity: a non-negative number with an optional suffix (e.g. 100m, 64Mi, 1)",
          },
        ]);
      else values[side][name] = v;
    }
  }
  for (const [name, req] of Object.entries(values.requests)) {
    const lim = values.limits[name];
    if (lim !== undefined && req > lim)
      c.add([
        {
          path: `${at}.requests[${JSON.stringify(truncate(name, 48))}]`,
          value: show((r.requests as Record<string, unknown>)[name]),
          message: `must not exceed its limit (${show((r.limits as Record<string, unknown>)[name])})`,
        },
      ]);
  }
}

function labelMap(c: Collector, at: string, m: unknown, labelValues: boolean): void {
  if (!isObject(m)) {
    c.add([{ path: at, value: show(m), message: "must be a map of strings" }]);
    return;
  }
  for (const [k, v] of Object.entries(m)) {
    const p = `${at}[${JSON.stringify(truncate(k, 48))}]`;
    if (!c.spend(p)) return;
    // Annotation keys are compared in lower case by the API server; label keys are not.
    const why = qualifiedNameProblem(labelValues ? k : k.toLowerCase());
    if (why) c.add([{ path: p, value: truncate(k), message: `is not a valid key: ${why}` }]);
    if (typeof v !== "string") c.add([{ path: p, value: show(v), message: "must be a string" }]);
    else if (labelValues && (v.length > 63 || !LABEL_VALUE.test(v)))
      c.add([
        {
          path: p,
          value: truncate(v),
          message:
            "is not a label value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
        },
      ]);
  }
}

function tolerationsProblems(c: Collector, at: string, ts: unknown): void {
  if (!Array.isArray(ts)) {
    c.add([{ path: at, value: show(ts), message: "must be a list of tolerations" }]);
    return;
  }
  ts.forEach((t: unknown, i) => {
    const p = `${at}[${i}]`;
    if (c.done || !c.spend(p)) return;
    if (!isObject(t)) {
      c.add([{ path: p, value: show(t), message: "must be an object" }]);
      return;
    }
    const op = t.operator ?? "Equal";
    if (typeof op !== "string" || !TOLERATION_OPERATORS.includes(op))
      c.add([
        {
          path: `${p}.operator`,
          value: show(op),
          message: `accepted: ${TOLERATION_OPERATORS.join(", ")}`,
        },
      ]);
    const effect = t.effect ?? "";
    if (typeof effect !== "string" || !TOLERATION_EFFECTS.includes(effect))
      c.add([
        {
          path: `${p}.effect`,
          value: show(effect),
          message: "accepted: NoSchedule, PreferNoSchedule, NoExecute (or empty: every effect)",
        },
      ]);
    const key = t.key ?? "";
    if (typeof key !== "string")
      c.add([{ path: `${p}.key`, value: show(key), message: "must be a string" }]);
    else if (key === "" && op !== "Exists")
      c.add([
        {
          path: `${p}.operator`,
          value: show(op),
          message: "must be Exists when key is empty (a toleration of every taint)",
        },
      ]);
    else if (key !== "") {
      const why = qualifiedNameProblem(key);
      if (why)
        c.add([{ path: `${p}.key`, value: truncate(key), message: `is not a taint key: ${why}` }]);
    }
    if (op === "Exists" && t.value !== undefined && t.value !== "")
      c.add([
        {
          path: `${p}.value`,
          value: show(t.value),
          message: "must be empty when operator is Exists",
        },
      ]);
    if (t.tolerationSeconds !== undefined) {
      if (typeof t.tolerationSeconds !== "number" || !Number.isInteger(t.tolerationSeconds))
        c.add([
          {
            path: `${p}.tolerationSeconds`,
            value: show(t.tolerationSeconds),
            message: "must be a whole number of seconds",
          },
        ]);
      else if (effect !== "NoExecute")
        c.add([
          {
            path: `${p}.tolerationSeconds`,
            value: show(t.tolerationSeconds),
            message: "is only allowed with effect NoExecute",
          },
        ]);
    }
  });
}

function serviceProblems(c: Collector, s: Readonly<Record<string, unknown>>): void {
  const at = "spec.service";
  const types = ["LoadBalancer", "NodePort", "ClusterIP"];
  if (s.type !== undefined && (typeof s.type !== "string" || !types.includes(s.type)))
    c.add([{ path: `${at}.type`, value: show(s.type), message: `accepted: ${types.join(", ")}` }]);
  if (s.annotations !== undefined) labelMap(c, `${at}.annotations`, s.annotations, false);
  const etp = s.externalTrafficPolicy;
  if (etp !== undefined && etp !== "Cluster" && etp !== "Local")
    c.add([
      {
        path: `${at}.externalTrafficPolicy`,
        value: show(etp),
        message: "accepted: Cluster, Local",
      },
    ]);
  const lbc = s.loadBalancerClass;
  if (lbc !== undefined && lbc !== "") {
    const why = typeof lbc === "string" ? qualifiedNameProblem(lbc) : "must be a string";
    if (why)
      c.add([
        {
          path: `${at}.loadBalancerClass`,
          value: show(lbc),
          message: `is not a load-balancer class name: ${why}`,
        },
      ]);
  }
}

/** spec.addresses: static Gateway addresses, as Gateway.spec.addresses but every entry has a value. */
function addressesProblems(c: Collector, list: unknown): void {
  const at = "spec.addresses";
  if (!Array.isArray(list) || list.length > 16) {
    c.add([{ path: at, value: show(list), message: "must be a list of at most 16 addresses" }]);
    return;
  }
  const seen = new Set<string>();
  list.forEach((a: unknown, i) => {
    const p = `${at}[${i}]`;
    if (c.done || !c.spend(p)) return;
    const type = isObject(a) ? (a.type ?? "IPAddress") : undefined;
    const value = isObject(a) ? a.value : undefined;
    if (type !== "IPAddress" && type !== "Hostname") {
      c.add([{ path: `${p}.type`, value: show(type), message: "accepted: IPAddress, Hostname" }]);
      return;
    }
    const ok =
      typeof value === "string" &&
      (type === "IPAddress" ? isIP(value) !== 0 : value.length <= 253 && DNS_SUBDOMAIN.test(value));
    if (!ok)
      c.add([
        {
          path: `${p}.value`,
          value: show(value),
          message: type === "IPAddress" ? "is not an IP address" : "is not a lower-case DNS name",
        },
      ]);
    else if (seen.has(`${type}/${value}`))
      c.add([{ path: `${p}.value`, value: show(value), message: "is listed twice" }]);
    else seen.add(`${type}/${value}`);
  });
}
