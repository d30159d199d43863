/**
 * Which names the fleet needs certificates for, and from which issuer: ACME listeners of our
 * Gateways' own spec (validation/acme.ts) and those the Ingress stage built for them
 * (docs/ingress.md, "Automatic HTTPS"; never a tenant's ListenerSet's), and the issuers of their
 * GatewayClass's KengineParameters (`spec.acme.issuers`), each granted to the namespaces its
 * `allowedNamespaces` names. A Gateway's own parameters declare no issuers (they are refused
 * when they try: validation/overrides.ts). Reads the snapshot only; the one state is a memo of
 * each class's issuers per (class, parameters map) object (a module-level WeakMap), which
 * changes the cost, never the answer.
 */
import { isOurClass } from "../ownership";
import { gatewayParametersProblem, parametersRefProblem } from "../provision/parameters";
import {
  Gateway,
  GatewayClass,
  KengineParameters,
  Listener,
  Snapshot,
  keyOf,
  selectorMatches,
} from "../snapshot";
import {
  AcmeAnnotation,
  AcmeGrant,
  acmeGrantOf,
  acmeGrantText,
  acmeIssuerOf,
  acmeNameProblem,
  acmeSecretName,
  isCertificateSecretFor,
  isIngressAcmeListener,
  writtenByController,
} from "../validation/acme";

export interface IssuerSpec {
  readonly name: string;
  /** The ACME directory URL. */
  readonly server: string;
  readonly email?: string;
  /** PEM roots trusted for the directory's HTTPS (a private CA such as Pebble); default: Node's. */
  readonly caBundle?: string;
  readonly externalAccountBinding?: {
    readonly keyID: string;
    /** Secret in the parameters' namespace holding the base64url MAC key. */
    readonly hmacKeySecretRef: { readonly name: string; readonly key?: string };
  };
  /** Only http-01 is built. */
  readonly challenge?: string;
  /** Namespace of the KengineParameters that declared it (its EAB Secret lives there). */
  readonly namespace: string;
  /** `namespace/name` of the KengineParameters that declared it (the account is per declaration). */
  readonly parameters: string;
  /** Which Gateway namespaces may use it. */
  readonly grant: AcmeGrant;
}

export interface WantedName {
  /** The certificate Secret's namespace (the Gateway's). */
  readonly namespace: string;
  readonly name: string;
  readonly secretName: string;
  readonly issuerName: string;
  readonly issuer: IssuerSpec;
  /** Gateways (namespace/name) whose listeners want this name, and the listeners. */
  readonly listeners: readonly { readonly gateway: string; readonly listener: string }[];
  /** Addresses of those Gateways (status.addresses), for the pre-validation self check. */
  readonly addresses: readonly string[];
  /** Whether one of the Gateways has an HTTP listener on port 80 (HTTP-01 needs one). */
  readonly http01Port: boolean;
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

function issuersOf(p: KengineParameters): IssuerSpec[] {
  const acme = p.spec?.["acme"] as { issuers?: unknown } | undefined;
  if (!Array.isArray(acme?.issuers)) return [];
  const namespace = p.metadata.namespace ?? "";
  return (acme.issuers as unknown[]).flatMap(raw => {
    const i = (raw ?? {}) as Record<string, unknown>;
    const name = str(i["name"]);
    const server = str(i["server"]);
    if (!name || !server) return [];
    const eab = i["externalAccountBinding"] as
      | { keyID?: unknown; hmacKeySecretRef?: { name?: unknown; key?: unknown } }
      | undefined;
    const keyID = str(eab?.keyID);
    const secret = str(eab?.hmacKeySecretRef?.name);
    return [
      {
        name,
        server,
        namespace,
        parameters: `${namespace}/${p.metadata.name}`,
        grant: acmeGrantOf(i),
        ...(str(i["email"]) && { email: str(i["email"]) }),
        ...(str(i["caBundle"]) && { caBundle: str(i["caBundle"]) }),
        ...(str(i["challenge"]) && { challenge: str(i["challenge"]) }),
        ...(keyID &&
          secret && {
            externalAccountBinding: {
              keyID,
              hmacKeySecretRef: {
                name: secret,
                ...(str(eab?.hmacKeySecretRef?.key) && { key: str(eab?.hmacKeySecretRef?.key) }),
              },
            },
          }),
      },
    ];
  });
}

/** A class's issuers, or why it has none: read once per class and parameters map. */
type ClassIssuers =
  | { readonly issuers: ReadonlyMap<string, IssuerSpec>; readonly parameters: string }
  | { readonly problem: string };
const classIssuersCache = new WeakMap<object, WeakMap<object, ClassIssuers>>();

function classIssuers(s: Snapshot, gc: GatewayClass): ClassIssuers {
  let byParams = classIssuersCache.get(gc);
  if (!byParams) classIssuersCache.set(gc, (byParams = new WeakMap()));
  const cached = byParams.get(s.objects.KengineParameters);
  if (cached) return cached;
  const ref = gc.spec?.parametersRef;
  const where = `GatewayClass ${gc.metadata.name} parametersRef`;
  let result: ClassIssuers;
  if (!ref)
    result = { problem: `GatewayClass ${gc.metadata.name} references no KengineParameters` };
  else {
    const problem = parametersRefProblem(s, ref, ref.namespace, where);
    const params = s.objects.KengineParameters.get(`${ref.namespace}/${ref.name}`);
    result =
      problem || !params
        ? {
            problem:
              problem ?? `${where}: KengineParameters ${ref.namespace}/${ref.name} not found`,
          }
        : {
            issuers: new Map(issuersOf(params).map(i => [i.name, i])),
            parameters: `${ref.namespace}/${ref.name}`,
          };
  }
  byParams.set(s.objects.KengineParameters, result);
  return result;
}

/** Why a Gateway's listener gets no issuer; `NotGranted` is the grant's doing, the rest config. */
export type IssuerResolution =
  | { readonly ok: true; readonly issuer: IssuerSpec }
  | {
      readonly ok: false;
      readonly reason: "NotDeclared" | "NotGranted" | "Unsupported";
      readonly message: string;
    };

/**
 * The issuer `issuerName` for a listener of `gw`: declared in its GatewayClass's parameters and
 * granted to the Gateway's namespace (an Ingress's listener: the Ingress's namespace), with a
 * challenge we build. The one rule the translator (listener status, HTTP-01 answers) and the
 * manager (what to order) share.
 */
export function issuerFor(
  s: Snapshot,
  gw: Gateway,
  issuerName: string,
  grantNamespace: string = gw.metadata.namespace ?? "",
): IssuerResolution {
  const className = gw.spec?.gatewayClassName ?? "";
  const gc = s.objects.GatewayClass.get(className);
  const fail = (reason: "NotDeclared" | "NotGranted" | "Unsupported", message: string) =>
    ({ ok: false, reason, message }) as const;
  if (!gc)
    return fail("NotDeclared", `ACME issuer ${issuerName}: GatewayClass ${className} not found`);
  const fromClass = classIssuers(s, gc);
  if ("problem" in fromClass)
    return fail(
      "NotDeclared",
      `ACME issuer ${issuerName} is not declared: ${fromClass.problem} (issuers come only from the GatewayClass's parameters, spec.acme.issuers)`,
    );
  const issuer = fromClass.issuers.get(issuerName);
  if (!issuer)
    return fail(
      "NotDeclared",
      `ACME issuer ${issuerName} is not declared in KengineParameters ${fromClass.parameters} of GatewayClass ${className} (spec.acme.issuers)`,
    );
  const ns = grantNamespace;
  const granted =
    issuer.grant.from === "All" ||
    (issuer.grant.from === "Same" && ns === issuer.namespace) ||
    (issuer.grant.from === "Selector" &&
      selectorMatches(issuer.grant.selector, s.objects.Namespace.get(ns)?.metadata.labels ?? {}));
  if (!granted)
    return fail(
      "NotGranted",
      `ACME issuer ${issuerName} of KengineParameters ${fromClass.parameters} is not granted to namespace ${ns} (allowedNamespaces ${acmeGrantText(issuer.grant, issuer.namespace)}): reference a certificate, or ask the platform team to grant the issuer`,
    );
  if ((issuer.challenge ?? "http-01") !== "http-01")
    return fail(
      "Unsupported",
      `challenge ${issuer.challenge} of ACME issuer ${issuerName} is not supported: only http-01 is built`,
    );
  return { ok: true, issuer };
}

/** Every name our Gateways' own ACME listeners want, one entry per (namespace, name). */
export function wantedNames(s: Snapshot): WantedName[] {
  const byKey = new Map<string, { -readonly [K in keyof WantedName]: WantedName[K] }>();
  for (const gw of [...s.objects.Gateway.values()].sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : 1))) {
    const gc = s.objects.GatewayClass.get(gw.spec?.gatewayClassName ?? "");
    if (!isOurClass(gc)) continue;
    const listeners = gw.spec.listeners ?? [];
    const fromIngresses = ingressAcmeListenersOf(s, gw);
    if (!listeners.some(l => acmeIssuerOf(l) !== undefined) && fromIngresses.length === 0) continue;
    // Parameters that cannot be used leave the Gateway without proxies: nothing to validate on.
    if (gatewayParametersProblem(s, gc, gw)) continue;
    const ns = gw.metadata.namespace ?? "";
    const http01Port = listeners.some(l => l.protocol === "HTTP" && l.port === 80);
    const addresses = (
      (gw as { status?: { addresses?: { value?: string }[] } }).status?.addresses ?? []
    ).flatMap(a => (a.value ? [a.value] : []));
    const own = new Set(listeners.flatMap(l => (l.hostname ? [l.hostname.toLowerCase()] : [])));
    const candidates = [
      ...listeners.map(l => ({ l, grantNamespace: ns })),
      ...fromIngresses.filter(c => !own.has(c.l.hostname?.toLowerCase() ?? "")),
    ];
    for (const { l, grantNamespace } of candidates) {
      const issuerName = acmeIssuerOf(l);
      if (issuerName === undefined || acmeNameProblem(l) || !l.hostname) continue;
      // Not ordered: the listener's status says why (translate/acme.ts).
      const resolved = issuerFor(s, gw, issuerName, grantNamespace);
      if (!resolved.ok) continue;
      const secretName = acmeSecretName(l.hostname);
      const secret = s.objects.Secret.get(`${ns}/${secretName}`);
      if (secret && !isCertificateSecretFor(secret, l.hostname)) continue;
      const key = `${ns}/${l.hostname}`;
      const entry = byKey.get(key) ?? {
        namespace: ns,
        name: l.hostname,
        secretName,
        issuerName,
        issuer: resolved.issuer,
        listeners: [],
        addresses: [],
        http01Port: false,
      };
      entry.listeners = [...entry.listeners, { gateway: keyOf(gw), listener: l.name }];
      entry.addresses = [...new Set([...entry.addresses, ...addresses])];
      entry.http01Port = entry.http01Port || http01Port;
      byKey.set(key, entry);
    }
  }
  return [...byKey.values()];
}

/**
 * The listeners the Ingress stage made for `gw` and granted their host (validation/acme.ts
 * isIngressAcmeListener), each with its Ingress's namespace, which the issuer's grant is
 * checked against. A tenant's own ListenerSet never has one.
 */
export function ingressAcmeListenersOf(
  s: Snapshot,
  gw: Gateway,
): { readonly l: Listener; readonly grantNamespace: string }[] {
  const out: { l: Listener; grantNamespace: string }[] = [];
  for (const ls of s.objects.ListenerSet.values()) {
    const ref = ls.spec?.parentRef;
    if (!ref || ref.name !== gw.metadata.name) continue;
    if ((ref.namespace ?? ls.metadata.namespace) !== gw.metadata.namespace) continue;
    for (const l of ls.spec.listeners ?? [])
      if (isIngressAcmeListener(l)) out.push({ l, grantNamespace: ls.metadata.namespace ?? "" });
  }
  return out;
}

/** What the certificate Secret says about a name (the persisted order state). */
export interface StoredState {
  readonly hasCertificate: boolean;
  readonly state?: string;
  readonly order?: string;
  readonly renewAt?: Date;
  readonly notAfter?: Date;
  readonly retryAt?: Date;
  readonly failures: number;
  readonly issuer?: string;
}

const date = (v: string | undefined): Date | undefined => {
  if (!v) return undefined;
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? undefined : d;
};

/** The order state in the name's Secret; a Secret the manager did not write says nothing. */
export function storedState(s: Snapshot, namespace: string, secretName: string): StoredState {
  const found = s.objects.Secret.get(`${namespace}/${secretName}`);
  const secret = writtenByController(found, "certificate") ? found : undefined;
  const a = secret?.metadata.annotations ?? {};
  const crt = secret?.data?.["tls.crt"];
  return {
    hasCertificate: crt !== undefined && crt !== "",
    state: a[AcmeAnnotation.state],
    order: a[AcmeAnnotation.order],
    renewAt: date(a[AcmeAnnotation.renewAt]),
    notAfter: date(a[AcmeAnnotation.notAfter]),
    retryAt: date(a[AcmeAnnotation.retryAt]),
    failures: Number(a[AcmeAnnotation.failures] ?? 0) || 0,
    issuer: a[AcmeAnnotation.issuer],
  };
}
