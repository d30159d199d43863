/**
 * Automatic HTTPS (issue 19): which listeners ask for an ACME certificate, which names can be
 * ordered, and the Secret that holds each name's certificate and order state. One rule shared
 * by admission (warnings), translation (listener status, certificate, HTTP-01 answers) and the
 * ACME manager (what to order).
 */
import { createHash } from "node:crypto";

/** The listener's `tls.options` key that names the issuer (KengineParameters spec.acme.issuers). */
export const ACME_ISSUER_OPTION = "kengine.io/acme-issuer";

/** Annotations of a certificate Secret the ACME manager keeps (one Secret per name). */
export const AcmeAnnotation = {
  name: "gateway.kengine.io/acme-name",
  issuer: "gateway.kengine.io/acme-issuer",
  /** Pending | Valid | Failed */
  state: "gateway.kengine.io/acme-state",
  /** The CA's error word for word, or what is under way. */
  message: "gateway.kengine.io/acme-message",
  /** The order in progress (a restarted controller resumes it). */
  order: "gateway.kengine.io/acme-order",
  /** JSON object token → key authorization: the HTTP-01 answers the proxies serve. */
  challenges: "gateway.kengine.io/acme-challenges",
  renewAt: "gateway.kengine.io/acme-renew-at",
  notAfter: "gateway.kengine.io/acme-not-after",
  /** No request to the CA before this time (back-off, Retry-After). */
  retryAt: "gateway.kengine.io/acme-retry-at",
  failures: "gateway.kengine.io/acme-failures",
} as const;

/** Label of every Secret the ACME manager writes. */
export const ACME_LABEL = "gateway.kengine.io/acme";

export const HTTP01_PREFIX = "/.well-known/acme-challenge/";

interface ListenerLike {
  readonly hostname?: string;
  readonly protocol: string;
  readonly tls?: {
    readonly mode?: string;
    readonly certificateRefs?: readonly unknown[];
    readonly options?: Readonly<Record<string, string>>;
  };
}

/** The issuer an HTTPS listener with no certificateRefs asks for, if it asks for one. */
export function acmeIssuerOf(l: ListenerLike): string | undefined {
  if (l.protocol !== "HTTPS" || (l.tls?.mode ?? "Terminate") !== "Terminate") return undefined;
  if ((l.tls?.certificateRefs ?? []).length > 0) return undefined;
  const issuer = l.tls?.options?.[ACME_ISSUER_OPTION];
  return issuer === undefined || issuer === "" ? undefined : issuer;
}

/** Why the listener's name cannot be ordered (undefined: it can). */
export function acmeNameProblem(l: ListenerLike): string | undefined {
  const h = l.hostname;
  if (h === undefined || h === "")
    return "an automatic certificate needs the listener's hostname (the name to order)";
  if (h.startsWith("*."))
    return `wildcard name ${h} needs the DNS-01 challenge, which is not supported: name each host in its own listener, or reference a certificate`;
  return undefined;
}

/** The Secret (in the listener owner's namespace) holding the certificate for `hostname`. */
export function acmeSecretName(hostname: string): string {
  const base = `kengine-acme-${hostname.toLowerCase()}`;
  if (base.length <= 253) return base;
  const h = createHash("sha256").update(hostname).digest("hex").slice(0, 16);
  return `${base.slice(0, 253 - 17).replace(/[.-]+$/, "")}-${h}`;
}

/** The HTTP-01 answers stored in a certificate Secret's annotation (invalid JSON: none). */
export function storedChallenges(
  annotations: Readonly<Record<string, string>> | undefined,
): ReadonlyMap<string, string> {
  const raw = annotations?.[AcmeAnnotation.challenges];
  if (!raw) return new Map();
  try {
    const parsed = JSON.parse(raw) as unknown;
    if (typeof parsed !== "object" || parsed === null) return new Map();
    return new Map(
      Object.entries(parsed).filter(
        (e): e is [string, string] =>
          /^[A-Za-z0-9_-]{1,256}$/.test(e[0]) &&
          typeof e[1] === "string" &&
          /^[A-Za-z0-9_.-]{1,512}$/.test(e[1]),
      ),
    );
  } catch {
    return new Map();
  }
}

/** What admission refuses in KengineParameters `spec.acme` beyond the CRD's schema. */
export function acmeParametersProblems(
  acme: unknown,
): { path: string; value: string; message: string }[] {
  const issuers = (acme as { issuers?: unknown } | undefined)?.issuers;
  if (!Array.isArray(issuers)) return [];
  const problems: { path: string; value: string; message: string }[] = [];
  const names = new Set<string>();
  issuers.forEach((raw: unknown, i) => {
    const at = `spec.acme.issuers[${i}]`;
    const it = (raw ?? {}) as Record<string, unknown>;
    if (typeof it["name"] === "string") {
      if (names.has(it["name"]))
        problems.push({
          path: `${at}.name`,
          value: it["name"],
          message: "issuer names must be unique",
        });
      names.add(it["name"]);
    }
    if (it["challenge"] === "tls-alpn-01")
      problems.push({
        path: `${at}.challenge`,
        value: "tls-alpn-01",
        message:
          "not supported yet: only http-01 (answered by the Gateway's proxies on port 80) is built",
      });
    const server = it["server"];
    if (typeof server === "string") {
      let ok = false;
      try {
        ok = new URL(server).protocol === "https:";
      } catch {
        ok = false;
      }
      if (!ok)
        problems.push({
          path: `${at}.server`,
          value: server,
          message: "must be an https:// URL (the ACME directory)",
        });
    }
    const bundle = it["caBundle"];
    if (typeof bundle === "string" && !bundle.includes("-----BEGIN CERTIFICATE-----"))
      problems.push({
        path: `${at}.caBundle`,
        value: bundle.slice(0, 40),
        message: "must hold PEM certificates",
      });
  });
  return problems;
}

/** Why a ListenerSet listener naming an ACME issuer gets no certificate (translate/listeners.ts). */
export const ACME_LISTENERSET_MESSAGE =
  "automatic certificates are ordered only for a Gateway's own listeners, not a ListenerSet's: " +
  "reference a certificate (tls.certificateRefs) or move the listener to the Gateway";
