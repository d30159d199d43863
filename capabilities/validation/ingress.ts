/**
 * Rules for one networking.k8s.io/v1 Ingress: everything in it the proxy cannot run as written,
 * each problem with its field path. Admission refuses an Ingress of our class with any problem;
 * the converter (ingress/convert.ts) calls the same function and leaves such an Ingress out,
 * reporting the same problems on it, so admission and status always agree (docs/ingress.md).
 *
 * Not checked here (cross-object facts, reported by the converter): Services and their named
 * ports, Secrets of `tls` entries, the class and the Gateway serving it.
 *
 * Raw JSON reaches admission, so every field is read as possibly absent or of the wrong type.
 */
import { Collector, items } from "./budget";
import { checkURLPath } from "./fields";
import { FieldProblem, checkRegex, display, truncate } from "./regex";
import { NGINX_PREFIX, readNginxAnnotations } from "./nginx-annotations";

/* ------------------------------------------------------------------ loose shapes */

export interface IngressBackendLike {
  readonly service?: {
    readonly name?: string;
    readonly port?: { readonly number?: number; readonly name?: string };
  };
  readonly resource?: {
    readonly apiGroup?: string;
    readonly kind?: string;
    readonly name?: string;
  };
}
export interface IngressPathLike {
  readonly path?: string;
  readonly pathType?: string;
  readonly backend?: IngressBackendLike;
}
export interface IngressRuleLike {
  readonly host?: string;
  readonly http?: { readonly paths?: readonly IngressPathLike[] };
}
export interface IngressLike {
  readonly metadata?: { readonly annotations?: Readonly<Record<string, string>> };
  readonly spec?: {
    readonly ingressClassName?: string;
    readonly defaultBackend?: IngressBackendLike;
    readonly rules?: readonly IngressRuleLike[];
    readonly tls?: readonly { readonly hosts?: readonly string[]; readonly secretName?: string }[];
  };
}

/** The path types of networking.k8s.io/v1; ImplementationSpecific is run as Prefix. */
export const PATH_TYPES = ["Exact", "Prefix", "ImplementationSpecific"] as const;

/* ------------------------------------------------------------------ entry points */

/** Collects every problem of an Ingress's spec (not just the first), within the budget. */
/** Go's strconv.ParseBool spellings of true, which ingress-nginx reads. */
const TRUE = new Set(["1", "t", "T", "TRUE", "true", "True"]);

/**
 * Whether the Ingress asks for regular-expression paths (`nginx.ingress.kubernetes.io/use-regex`
 * true). Only a class that reads the ingress-nginx annotations honours it.
 */
export function asksRegexPaths(ingress: IngressLike): boolean {
  const v: unknown = ingress?.metadata?.annotations?.["nginx.ingress.kubernetes.io/use-regex"];
  return typeof v === "string" && TRUE.has(v.trim());
}

/**
 * The rules of one Ingress. `regexPaths` (default: the Ingress asks for them) reads Prefix and
 * ImplementationSpecific paths as RE2 regular expressions; the converter passes false when the
 * class does not read the annotation, and admission then refuses them through
 * ingressAnnotationProblems.
 */
export function ingressProblems(
  ingress: IngressLike,
  c = new Collector(),
  regexPaths = asksRegexPaths(ingress),
): FieldProblem[] {
  const spec = ingress?.spec;
  if (!spec || typeof spec !== "object") return c.problems();
  if (spec.defaultBackend !== undefined && spec.defaultBackend !== null)
    backend(c, "spec.defaultBackend", spec.defaultBackend);
  items(spec.rules).forEach((rule, i) => {
    if (c.done || !rule || typeof rule !== "object") return;
    const at = `spec.rules[${i}]`;
    if (rule.host !== undefined && rule.host !== "" && c.spend(`${at}.host`))
      c.add(checkIngressHost(`${at}.host`, rule.host));
    items(rule.http?.paths).forEach((p, j) => {
      if (c.done || !p || typeof p !== "object") return;
      const where = `${at}.http.paths[${j}]`;
      if (c.spend(`${where}.path`)) c.add(checkIngressPath(where, p.path, p.pathType, regexPaths));
      backend(c, `${where}.backend`, p.backend);
    });
  });
  items(spec.tls).forEach((t, i) => {
    if (c.done || !t || typeof t !== "object") return;
    items(t.hosts).forEach((h, j) => {
      if (c.spend(`spec.tls[${i}].hosts[${j}]`))
        c.add(checkIngressHost(`spec.tls[${i}].hosts[${j}]`, h));
    });
  });
  return c.problems();
}

/**
 * Annotation warnings for admission: annotations of other Ingress controllers are not read, so
 * an Ingress that relies on them behaves differently here (docs/ingress.md, migration). When
 * the class reads the ingress-nginx annotations, those are warned about by their table
 * (validation/nginx-annotations.ts): nothing for a supported one, what is missing for a
 * partial one, "ignored" for the rest.
 */
export function ingressAnnotationWarnings(ingress: IngressLike, readsNginx = false): string[] {
  const annotations = ingress?.metadata?.annotations;
  if (!annotations || typeof annotations !== "object") return [];
  const foreign = Object.keys(annotations)
    .filter(key => FOREIGN_ANNOTATION_PREFIXES.some(prefix => key.startsWith(prefix)))
    .filter(key => !(readsNginx && key.startsWith(NGINX_PREFIX)))
    .sort()
    .map(
      key =>
        `metadata.annotations[${JSON.stringify(key)}]: not implemented by the Kengine ingress controller and ignored (see docs/ingress.md)`,
    );
  return readsNginx ? [...readNginxAnnotations(annotations).warnings, ...foreign] : foreign;
}

/**
 * The refused ingress-nginx annotations and values the proxy cannot run, for an Ingress whose
 * class reads them (none otherwise): admission refuses it, the converter leaves it out.
 */
export function ingressAnnotationProblems(
  ingress: IngressLike,
  readsNginx: boolean,
): FieldProblem[] {
  if (readsNginx) return readNginxAnnotations(ingress?.metadata?.annotations).problems;
  // use-regex is not read: its paths are matched literally, and the regex-looking ones refused
  if (!asksRegexPaths(ingress)) return [];
  const literal = ingressProblems(ingress, new Collector(), false);
  const asRegex = new Set(ingressProblems(ingress, new Collector(), true).map(p => p.path));
  return literal.filter(p => !asRegex.has(p.path));
}

/** Annotation prefixes of other controllers that people carry over when they switch. */
export const FOREIGN_ANNOTATION_PREFIXES = [
  "nginx.ingress.kubernetes.io/",
  "nginx.org/",
  "traefik.ingress.kubernetes.io/",
  "haproxy.org/",
  "alb.ingress.kubernetes.io/",
  "konghq.com/",
  "projectcontour.io/",
] as const;

/* ------------------------------------------------------------------ fields */

/** RFC 1123 label, lowercase, as the API server requires of Ingress hosts. */
const LABEL = /^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$/;
const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/;

/**
 * An Ingress host: a lowercase DNS name, optionally with `*.` as its whole first label (which
 * in Ingress matches exactly one label); no IP address, no port.
 */
export function checkIngressHost(path: string, host: unknown): FieldProblem[] {
  if (typeof host !== "string" || host === "")
    return [{ path, value: display(host ?? ""), message: "must be a non-empty host name" }];
  const bad = (message: string): FieldProblem[] => [{ path, value: truncate(host), message }];
  if (host.length > 253) return bad("is longer than 253 characters");
  if (IPV4.test(host) || host.includes(":"))
    return bad("must be a DNS name: IP addresses and ports are not allowed in an Ingress host");
  const labels = host.split(".");
  const rest = labels[0] === "*" ? labels.slice(1) : labels;
  if (labels[0] === "*" && rest.length === 0)
    return bad('"*" alone is no host: leave host empty to match every host');
  if (rest.some(l => l.includes("*")))
    return bad('a wildcard must be the whole first label, as in "*.example.com"');
  const wrong = rest.find(l => !LABEL.test(l));
  if (wrong !== undefined)
    return bad(
      `label ${JSON.stringify(truncate(wrong, 63))} is not a DNS label: lowercase letters, digits and "-", 1 to 63 characters, starting and ending with a letter or digit`,
    );
  return [];
}

/** Characters that make a path look like a regular expression or a glob. */
const REGEX_LOOKING = /[\\^$()[\]{}|*]|\.\+/;

/**
 * A path and its type. Exact and Prefix paths must be absolute URL paths; ImplementationSpecific
 * is run as Prefix (docs/ingress.md), so the same rules apply to it, an empty path meaning "/".
 * A path that looks like a regular expression is refused: it would be matched literally here,
 * unlike in controllers that read `use-regex`.
 */
export function checkIngressPath(
  at: string,
  path: unknown,
  pathType: unknown,
  regex = false,
): FieldProblem[] {
  const type = display(pathType ?? "");
  if (!(PATH_TYPES as readonly string[]).includes(type))
    return [
      {
        path: `${at}.pathType`,
        value: truncate(type),
        message: `must be one of ${PATH_TYPES.join(", ")}`,
      },
    ];
  const where = `${at}.path`;
  if ((path === undefined || path === "") && type === "ImplementationSpecific") return [];
  if (typeof path !== "string" || !path.startsWith("/"))
    return [{ path: where, value: truncate(display(path ?? "")), message: 'must start with "/"' }];
  // use-regex: an RE2 expression matched from the path's start (docs/ingress.md, "Paths")
  if (regex && type !== "Exact") {
    // eslint-disable-next-line no-control-regex -- matching control characters is the point
    if (/[\u0000-\u0020\u007f]/.test(path))
      return [
        { path: where, value: truncate(path), message: "must hold no space or control character" },
      ];
    return checkRegex(where, path);
  }
  if (REGEX_LOOKING.test(path))
    return [
      {
        path: where,
        value: truncate(path),
        message: `looks like a regular expression or a glob, but pathType ${type} matches it literally (${type === "Exact" ? "as the whole path" : "by path elements"}): write plain paths; regular-expression paths are not supported for Ingress`,
      },
    ];
  return checkURLPath(where, path);
}

/** IANA service name, as a Service port name must be. */
const PORT_NAME = /^(?=.*[a-z])(?!.*--)[a-z0-9](?:[-a-z0-9]{0,13}[a-z0-9])?$/;
/** RFC 1035 label, as a Service name must be. */
const SERVICE_NAME = /^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$/;

/** A backend: a Service by name with a port number or name; resource backends are refused. */
function backend(c: Collector, at: string, b: IngressBackendLike | undefined): void {
  if (!c.spend(at)) return;
  if (!b || typeof b !== "object") {
    c.add([{ path: at, value: display(b ?? ""), message: "must name a Service" }]);
    return;
  }
  if (b.resource !== undefined && b.resource !== null) {
    const r = b.resource;
    c.add([
      {
        path: `${at}.resource`,
        value: truncate(`${r?.apiGroup ?? ""}/${r?.kind ?? ""}/${r?.name ?? ""}`),
        message:
          "resource backends are not supported: the proxy forwards only to Services (use service.name and service.port)",
      },
    ]);
    return;
  }
  const s = b.service;
  if (!s || typeof s !== "object") {
    c.add([{ path: `${at}.service`, value: "", message: "must name a Service" }]);
    return;
  }
  if (typeof s.name !== "string" || !SERVICE_NAME.test(s.name))
    c.add([
      {
        path: `${at}.service.name`,
        value: truncate(display(s.name ?? "")),
        message: "must be a Service name (a lowercase RFC 1035 label)",
      },
    ]);
  const port = s.port;
  const hasNumber = port?.number !== undefined && port?.number !== null;
  const hasName = port?.name !== undefined && port?.name !== null && port?.name !== "";
  if (hasNumber === hasName) {
    c.add([
      {
        path: `${at}.service.port`,
        value: truncate(display(port ?? "")),
        message: "must give exactly one of number and name",
      },
    ]);
    return;
  }
  if (hasNumber) {
    const n = port!.number;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > 65535)
      c.add([
        {
          path: `${at}.service.port.number`,
          value: display(n),
          message: "must be a port number from 1 to 65535",
        },
      ]);
  } else if (typeof port!.name !== "string" || !PORT_NAME.test(port!.name))
    c.add([
      {
        path: `${at}.service.port.name`,
        value: truncate(display(port!.name)),
        message:
          'must be a Service port name: at most 15 lowercase letters, digits and "-", with a letter, no "--", not starting or ending with "-"',
      },
    ]);
}
