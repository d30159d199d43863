/**
 * One Ingress of our class, converted into the Gateway API objects the pipeline already serves
 * (docs/ingress.md, "Mapping"): HTTPRoutes per host, attached to the class's Gateway, and for
 * `tls` entries one ListenerSet of HTTPS listeners using the Ingress's Secrets. The synthetic
 * objects are named from the Ingress (deterministically), carry a label and an owner reference
 * to it, and take its creationTimestamp, so Gateway API precedence orders them by the
 * Ingress's age and their status maps back onto the Ingress.
 *
 * An Ingress with any validation problem (validation/ingress.ts) converts to nothing and
 * reports the problems on itself. Problems only the converter sees (a Service or named port
 * that cannot be resolved, a `tls` entry with neither a Secret nor an ACME issuer, duplicates)
 * leave out or disable just that piece: a path whose backend cannot be resolved keeps its
 * match and gets no backends, so it answers 500 as Gateway API says, instead of falling
 * through to another rule.
 *
 * Pure: no I/O, no clock; Services are read through the look-up function given.
 */
import type { V1Ingress, V1Service } from "@kubernetes/client-node";
import { FieldProblem, display, truncate } from "../validation/regex";
import { IngressBackendLike, asksRegexPaths, ingressProblems } from "../validation/ingress";
import { items } from "../validation/budget";
import { SyntheticListener, tlsListenersOf } from "./tls";
import {
  CanaryMatch,
  NO_NGINX_EFFECTS,
  CorsEffect,
  NginxEffects,
  RedirectEffect,
  annotationPath,
  readNginxAnnotations,
} from "../validation/nginx-annotations";
import type { AuthEffect } from "../validation/nginx-auth";
import {
  EXTERNAL_AUTH_FIELD,
  MAX_REQUEST_BODY_FIELD,
  PROXY_TIMEOUTS_FIELD,
  SESSION_SAME_SITE_FIELD,
  SOURCE_RANGES_FIELD,
} from "../ir";
import { GATEWAY_GROUP } from "./classes";
import {
  SyntheticPath,
  hostsIntersect,
  pathMatch,
  singleLabelHostRegex,
  syntheticName,
} from "./names";

export { hostsIntersect, pathMatch, singleLabelHostRegex, syntheticName };
export type { SyntheticListener };

/** Marks every object made from an Ingress. */
export const SYNTHETIC_LABEL = "ingress.kengine.io/synthetic";
/** `namespace/name` of the Ingress an object was made from. */
export const SOURCE_ANNOTATION = "ingress.kengine.io/ingress";
/** JSON array: per HTTPRoute rule, the Ingress field it was made from. */
export const RULE_SOURCES_ANNOTATION = "ingress.kengine.io/rule-sources";
/** Gateway API allows at most 16 rules per HTTPRoute and 64 listeners per ListenerSet. */
export const MAX_RULES_PER_ROUTE = 16;
export const MAX_LISTENERS = 64;

export interface Target {
  /** The Gateway serving the class (classes.ts servingOf, or the managed fleet's Gateway). */
  readonly gateway: { readonly namespace: string; readonly name: string };
  /** Port of the HTTPS listeners made for `tls` entries (443 unless configured). */
  readonly httpsPort?: number;
  /** Whether the class reads the ingress-nginx annotations (classes.ts readsNginxAnnotations). */
  readonly nginxAnnotations?: boolean;
  /** The class's ACME issuer for `tls` entries without a Secret (docs/ingress.md). */
  readonly acmeIssuer?: string;
}

export type ServiceLookup = (namespace: string, name: string) => V1Service | undefined;

interface Metadata {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  ownerReferences: {
    apiVersion: string;
    kind: string;
    name: string;
    uid: string;
    controller: boolean;
  }[];
  /** The Ingress's uid and the object's name: keys the session tokens' HMAC. */
  uid: string;
  creationTimestamp?: string;
  generation?: number;
}
interface ParentRef {
  group: string;
  kind: string;
  name: string;
  namespace?: string;
}
export interface SyntheticMatch {
  path: SyntheticPath;
  headers?: { type: "Exact" | "RegularExpression"; name: string; value: string }[];
}
export type SyntheticFilter =
  | {
      type: "RequestRedirect";
      requestRedirect: {
        scheme?: "http" | "https";
        hostname?: string;
        port?: number;
        path?: { type: "ReplaceFullPath"; replaceFullPath: string };
        statusCode: number;
      };
    }
  | {
      type: "URLRewrite";
      urlRewrite: {
        hostname?: string;
        path?: { type: "ReplaceFullPath"; replaceFullPath: string };
      };
    }
  | {
      type: "ResponseHeaderModifier";
      responseHeaderModifier: { set: { name: string; value: string }[] };
    }
  | { type: "CORS"; cors: CorsEffect };
export interface SyntheticRule {
  matches: SyntheticMatch[];
  filters: SyntheticFilter[];
  backendRefs: { group: ""; kind: "Service"; name: string; port: number; weight?: number }[];
  timeouts?: { backendRequest: string };
  /** proxy-body-size (ir/types.ts MAX_REQUEST_BODY_FIELD: no Gateway API field says it). */
  [MAX_REQUEST_BODY_FIELD]?: number;
  /** proxy-connect/send-timeout in seconds (ir/types.ts PROXY_TIMEOUTS_FIELD). */
  [PROXY_TIMEOUTS_FIELD]?: { connect?: number; send?: number };
  /** whitelist/denylist-source-range (ir/types.ts SOURCE_RANGES_FIELD). */
  [SOURCE_RANGES_FIELD]?: { allow?: string[]; deny?: string[] };
  /** session-cookie-samesite (ir/types.ts SESSION_SAME_SITE_FIELD), with sessionPersistence. */
  [SESSION_SAME_SITE_FIELD]?: "None" | "Lax" | "Strict";
  /** auth-url (ir/types.ts EXTERNAL_AUTH_FIELD). */
  [EXTERNAL_AUTH_FIELD]?: AuthEffect;
  sessionPersistence?: {
    type: "Cookie";
    cookie: { name: string; path?: string; lifetimeType: "Session" | "Permanent" };
    absoluteTimeout?: string;
  };
}

/**
 * Every answer to an Ingress's request carries `Server: Caddy`, the backend's own `Server`
 * replaced, as ingress-nginx's carry its own (nginx passes no upstream `Server`) and as the
 * Ingress conformance suite asks (docs/ingress.md, "The Server header"). Gateway API routes
 * keep Caddy's reverse-proxy behaviour (the backend's `Server`, if any, and `Via`).
 */
export const SERVER_HEADER_FILTER: SyntheticFilter = {
  type: "ResponseHeaderModifier",
  responseHeaderModifier: { set: [{ name: "Server", value: "Caddy" }] },
};
export interface SyntheticHTTPRoute {
  apiVersion: "gateway.networking.k8s.io/v1";
  kind: "HTTPRoute";
  metadata: Metadata;
  spec: { parentRefs: ParentRef[]; hostnames?: string[]; rules: SyntheticRule[] };
}
export interface SyntheticListenerSet {
  apiVersion: "gateway.networking.k8s.io/v1";
  kind: "ListenerSet";
  metadata: Metadata;
  spec: { parentRef: ParentRef; listeners: SyntheticListener[] };
}
/** A canary's canary-weight: its share of the main Ingress's paths (reconcile/ingress-stage.ts). */
export interface CanaryWeight {
  readonly weight: number;
  readonly total: number;
  /** The canary's paths and their backends (in the canary's namespace, as the main's). */
  readonly paths: readonly {
    readonly host: string;
    readonly path: SyntheticMatch["path"];
    readonly backendRefs: SyntheticRule["backendRefs"];
    readonly source: string;
  }[];
}
export interface Conversion {
  readonly httpRoutes: SyntheticHTTPRoute[];
  readonly listenerSets: SyntheticListenerSet[];
  /** Whether the Ingress is a canary (nginx `canary: "true"`): never a main Ingress. */
  readonly canary?: true;
  /** canary-weight of a canary Ingress, applied to its main Ingress's routes. */
  readonly canaryWeight?: CanaryWeight;
  /** Reported on the Ingress (Events, admission warnings), with Ingress field paths. */
  readonly problems: FieldProblem[];
}

/* ------------------------------------------------------------------ conversion */

interface Piece {
  match: SyntheticMatch;
  backend: IngressBackendLike | undefined;
  source: string;
  /** The app-root redirect of `/`, made from the annotation rather than a path. */
  appRoot?: true;
}

const redirectFilter = (r: RedirectEffect): SyntheticFilter => ({
  type: "RequestRedirect",
  requestRedirect: {
    ...(r.scheme && { scheme: r.scheme }),
    ...(r.hostname && { hostname: r.hostname }),
    ...(r.port !== undefined && { port: r.port }),
    path: { type: "ReplaceFullPath", replaceFullPath: r.path },
    statusCode: r.statusCode,
  },
});

/**
 * Seconds as a Gateway API Duration: groups of at most 5 digits (`86400` is `24h`), so any
 * value up to 99999h fits the CRD's pattern.
 */
export function duration(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  const out = `${h ? `${h}h` : ""}${m ? `${m}m` : ""}${s ? `${s}s` : ""}`;
  return out || "0s";
}

/** Converts one Ingress. Deterministic; never throws on any object shape. */
export function convertIngress(
  ingress: V1Ingress,
  target: Target,
  lookupService: ServiceLookup,
): Conversion {
  const regexPaths = target.nginxAnnotations === true && asksRegexPaths(ingress);
  const problems: FieldProblem[] = ingressProblems(ingress, undefined, regexPaths);
  const empty = { httpRoutes: [], listenerSets: [], problems };
  let effects: NginxEffects = NO_NGINX_EFFECTS;
  if (target.nginxAnnotations) {
    const reading = readNginxAnnotations(
      ingress?.metadata?.annotations,
      typeof ingress?.metadata?.namespace === "string" ? ingress.metadata.namespace : "",
    );
    problems.push(...reading.problems);
    effects = reading.effects;
  }
  const name = ingress?.metadata?.name;
  const namespace = ingress?.metadata?.namespace;
  if (typeof name !== "string" || !name || typeof namespace !== "string" || !namespace) {
    problems.push({ path: "metadata", value: "", message: "needs a name and a namespace" });
    return empty;
  }
  if (problems.length > 0) return empty;
  if (effects.canary?.length === 0 && !effects.canaryWeight) {
    problems.push({
      path: annotationPath("canary"),
      value: "true",
      message:
        "a canary without canary-by-header, canary-by-cookie or canary-weight selects no request: it is not served",
    });
    return empty;
  }
  const spec = ingress.spec && typeof ingress.spec === "object" ? ingress.spec : {};

  const listenerSet = tlsListeners(ingress, name, namespace, target, problems);
  const gatewayParent: ParentRef = { group: GATEWAY_GROUP, kind: "Gateway", ...target.gateway };
  // The ListenerSet is a parent only of routes one of its listeners can serve: a parent
  // without a matching listener would be reported on the Ingress as NoMatchingListenerHostname.
  const parentRefsFor = (host: string): ParentRef[] =>
    listenerSet && listenerSet.spec.listeners.some(l => hostsIntersect(host, l.hostname ?? ""))
      ? [
          gatewayParent,
          { group: GATEWAY_GROUP, kind: "ListenerSet", name: listenerSet.metadata.name },
        ]
      : [gatewayParent];

  // Group paths by host, in order of first appearance; "" is "every host".
  const hosts = new Map<string, Piece[]>();
  const seen = new Map<string, string>();
  const add = (host: string, piece: Piece, quiet = false): void => {
    const key = `${host}\n${piece.match.path.type}\n${piece.match.path.value}`;
    const first = seen.get(key);
    if (first !== undefined) {
      if (!quiet)
        problems.push({
          path: piece.source,
          value: truncate(piece.match.path.value),
          message: `duplicates ${first} (same host, path and type): the first is used`,
        });
      return;
    }
    if (effects.appRoot !== undefined && !hosts.has(host) && !piece.appRoot)
      add(host, {
        match: { ...piece.match, path: { type: "Exact", value: "/" } },
        backend: undefined,
        source: annotationPath("app-root"),
        appRoot: true,
      });
    seen.set(key, piece.source);
    const list = hosts.get(host) ?? [];
    list.push(piece);
    hosts.set(host, list);
  };
  items(spec.rules).forEach((rule, i) => {
    if (!rule || typeof rule !== "object") return;
    const host = typeof rule.host === "string" ? rule.host : "";
    items(rule.http?.paths).forEach((p, j) => {
      if (!p || typeof p !== "object") return;
      const match: SyntheticMatch = { path: pathMatch(p.path, p.pathType, regexPaths) };
      if (host.startsWith("*."))
        match.headers = [
          { type: "RegularExpression", name: "Host", value: singleLabelHostRegex(host) },
        ];
      add(host, { match, backend: p.backend, source: `spec.rules[${i}].http.paths[${j}]` });
    });
  });
  // server-alias: the named hosts' paths under each alias; the Ingress's own rules come first.
  const named = [...hosts].filter(([host]) => host !== "" && !host.startsWith("*."));
  for (const alias of effects.aliases ?? [])
    for (const [, pieces] of named)
      for (const piece of pieces)
        add(
          alias,
          { ...piece, source: `${piece.source} (${annotationPath("server-alias")})` },
          true,
        );
  if (spec.defaultBackend) {
    // The catch-all: what no rule of any host matches (an explicit "/" rule without host wins).
    const match: SyntheticMatch = { path: { type: "PathPrefix", value: "/" } };
    add("", { match, backend: spec.defaultBackend, source: "spec.defaultBackend" }, true);
  }

  const httpRoutes: SyntheticHTTPRoute[] = [];
  const rewrite = {
    ...(effects.hostname !== undefined && { hostname: effects.hostname }),
    ...(effects.rewritePath !== undefined && {
      path: { type: "ReplaceFullPath" as const, replaceFullPath: effects.rewritePath },
    }),
  };
  // canary: each selecting header is a match of its own, more specific than the main Ingress's.
  const matchesOf = (piece: Piece): SyntheticMatch[] =>
    effects.canary
      ? effects.canary.map((h: CanaryMatch) => ({
          ...piece.match,
          headers: [...(piece.match.headers ?? []), { ...h }],
        }))
      : [piece.match];
  const cors: SyntheticFilter[] = effects.cors
    ? [{ type: "CORS", cors: structuredClone(effects.cors) }]
    : [];
  const affinity = effects.affinity;
  const sessionPersistence: SyntheticRule["sessionPersistence"] = affinity && {
    type: "Cookie",
    cookie: {
      name: affinity.cookieName,
      ...(affinity.path !== undefined && { path: affinity.path }),
      lifetimeType: affinity.maxAgeS !== undefined ? "Permanent" : "Session",
    },
    ...(affinity.maxAgeS !== undefined && { absoluteTimeout: duration(affinity.maxAgeS) }),
  };
  const ruleOf = (piece: Piece): SyntheticRule => {
    const matches = matchesOf(piece);
    if (piece.appRoot)
      return {
        matches,
        filters: [
          SERVER_HEADER_FILTER,
          redirectFilter({ path: effects.appRoot ?? "/", statusCode: 302 }),
        ],
        backendRefs: [],
      };
    if (effects.redirect)
      return {
        matches,
        filters: [SERVER_HEADER_FILTER, redirectFilter(effects.redirect)],
        backendRefs: [],
      };
    return {
      matches,
      filters:
        Object.keys(rewrite).length > 0
          ? [SERVER_HEADER_FILTER, ...cors, { type: "URLRewrite", urlRewrite: rewrite }]
          : [SERVER_HEADER_FILTER, ...cors],
      backendRefs: backendRefs(piece, namespace, lookupService, problems),
      ...(effects.backendRequest !== undefined && {
        timeouts: { backendRequest: effects.backendRequest },
      }),
      ...(sessionPersistence && { sessionPersistence: structuredClone(sessionPersistence) }),
      ...(affinity?.sameSite && { [SESSION_SAME_SITE_FIELD]: affinity.sameSite }),
      ...(effects.maxBodyBytes !== undefined && {
        [MAX_REQUEST_BODY_FIELD]: effects.maxBodyBytes,
      }),
      ...(effects.proxyTimeouts && { [PROXY_TIMEOUTS_FIELD]: { ...effects.proxyTimeouts } }),
    };
  };
  // ssl-redirect: on a host a `tls` listener serves, the Gateway's own listeners answer a
  // redirect to https and only the ListenerSet's HTTPS listeners serve the paths.
  const toHTTPS: SyntheticFilter = {
    type: "RequestRedirect",
    requestRedirect: {
      scheme: "https",
      ...((target.httpsPort ?? 443) !== 443 && { port: target.httpsPort }),
      statusCode: 308,
    },
  };
  const route = (
    part: string,
    host: string,
    parentRefs: ParentRef[],
    chunk: Piece[],
    rules: SyntheticRule[],
  ): SyntheticHTTPRoute => {
    const meta = metadata(ingress, syntheticName(name, part), namespace);
    meta.annotations[RULE_SOURCES_ANNOTATION] = JSON.stringify(chunk.map(p => p.source));
    return {
      apiVersion: "gateway.networking.k8s.io/v1",
      kind: "HTTPRoute",
      metadata: meta,
      spec: {
        parentRefs,
        ...(host ? { hostnames: [host] } : {}),
        // source ranges and authorization on every rule, redirects included: nothing of the
        // Ingress answers a client the ranges or the authorization Service refuse
        rules:
          effects.sourceRanges || effects.auth
            ? rules.map(r => ({
                ...r,
                ...(effects.sourceRanges && {
                  [SOURCE_RANGES_FIELD]: structuredClone(effects.sourceRanges) as {
                    allow?: string[];
                    deny?: string[];
                  },
                }),
                ...(effects.auth && { [EXTERNAL_AUTH_FIELD]: structuredClone(effects.auth) }),
              }))
            : rules,
      },
    };
  };
  let canaryWeight: CanaryWeight | undefined;
  if (effects.canaryWeight) {
    const paths = [...hosts].flatMap(([host, pieces]) =>
      pieces
        .filter(p => !p.appRoot)
        .map(p => ({
          host,
          path: p.match.path,
          backendRefs: backendRefs(p, namespace, lookupService, problems),
          source: p.source,
        })),
    );
    canaryWeight = { ...effects.canaryWeight, paths };
    // Only a weight: the canary has no routes of its own, only a share of the main's.
    if (effects.canary?.length === 0)
      return { httpRoutes: [], listenerSets: [], problems, canary: true, canaryWeight };
  }
  for (const [host, pieces] of hosts) {
    const parentRefs = parentRefsFor(host);
    const redirected = effects.sslRedirect && parentRefs.length > 1;
    for (let k = 0; k * MAX_RULES_PER_ROUTE < pieces.length; k++) {
      const chunk = pieces.slice(k * MAX_RULES_PER_ROUTE, (k + 1) * MAX_RULES_PER_ROUTE);
      const rules = chunk.map(ruleOf);
      httpRoutes.push(
        route(
          `route\n${host}\n${k}`,
          host,
          redirected ? parentRefs.slice(1) : parentRefs,
          chunk,
          rules,
        ),
      );
      if (redirected)
        httpRoutes.push(
          route(
            `redirect\n${host}\n${k}`,
            host,
            [gatewayParent],
            chunk,
            chunk.map(p => ({
              matches: matchesOf(p),
              filters: [SERVER_HEADER_FILTER, toHTTPS],
              backendRefs: [],
            })),
          ),
        );
    }
  }
  return {
    httpRoutes,
    listenerSets: listenerSet ? [listenerSet] : [],
    problems,
    ...(effects.canary && { canary: true as const }),
    ...(canaryWeight && { canaryWeight }),
  };
}

function metadata(ingress: V1Ingress, name: string, namespace: string): Metadata {
  const created = ingress.metadata?.creationTimestamp as unknown;
  const creationTimestamp =
    created instanceof Date && !Number.isNaN(created.getTime())
      ? created.toISOString()
      : typeof created === "string"
        ? created
        : undefined;
  const generation = ingress.metadata?.generation;
  return {
    name,
    namespace,
    uid: `${ingress.metadata?.uid ?? ""}/${name}`,
    labels: { [SYNTHETIC_LABEL]: "true" },
    annotations: { [SOURCE_ANNOTATION]: `${namespace}/${ingress.metadata?.name ?? ""}` },
    ownerReferences: [
      {
        apiVersion: "networking.k8s.io/v1",
        kind: "Ingress",
        name: ingress.metadata?.name ?? "",
        uid: ingress.metadata?.uid ?? "",
        controller: true,
      },
    ],
    ...(creationTimestamp !== undefined ? { creationTimestamp } : {}),
    ...(typeof generation === "number" ? { generation } : {}),
  };
}

/** The backendRefs of one path: none (a 500) when its Service port cannot be resolved. */
function backendRefs(
  piece: Piece,
  namespace: string,
  lookupService: ServiceLookup,
  problems: FieldProblem[],
): SyntheticRule["backendRefs"] {
  const s = piece.backend?.service;
  const where = piece.source === "spec.defaultBackend" ? piece.source : `${piece.source}.backend`;
  if (!s?.name) return [];
  if (typeof s.port?.number === "number")
    return [{ group: "", kind: "Service", name: s.name, port: s.port.number }];
  const portName = s.port?.name ?? "";
  const service = lookupService(namespace, s.name);
  if (!service) {
    problems.push({
      path: `${where}.service.name`,
      value: truncate(s.name),
      message: `Service ${namespace}/${s.name} not found: its port ${JSON.stringify(portName)} cannot be resolved (the path answers 500)`,
    });
    return [];
  }
  const port = (service.spec?.ports ?? []).find(p => p?.name === portName);
  if (!port || typeof port.port !== "number") {
    problems.push({
      path: `${where}.service.port.name`,
      value: truncate(display(portName)),
      message: `Service ${namespace}/${s.name} has no port named ${JSON.stringify(portName)} (the path answers 500)`,
    });
    return [];
  }
  return [{ group: "", kind: "Service", name: s.name, port: port.port }];
}

/** One ListenerSet of HTTPS listeners for the `tls` entries, or undefined when there are none. */
function tlsListeners(
  ingress: V1Ingress,
  name: string,
  namespace: string,
  target: Target,
  problems: FieldProblem[],
): SyntheticListenerSet | undefined {
  const listeners = tlsListenersOf(ingress, target, MAX_LISTENERS, problems);
  if (listeners.length === 0) return undefined;
  return {
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "ListenerSet",
    metadata: metadata(ingress, syntheticName(name, "tls"), namespace),
    spec: {
      parentRef: { group: GATEWAY_GROUP, kind: "Gateway", ...target.gateway },
      listeners,
    },
  };
}
