/**
 * Which names the fleet needs certificates for, and from which issuer: ACME listeners of our
 * Gateways (validation/acme.ts) and the issuers of their KengineParameters
 * (`spec.acme.issuers`, class level, a Gateway's own parameters add or replace by name).
 * Pure: reads the snapshot only.
 */
import { isOurClass } from "../ownership";
import { KengineParameters, Snapshot, keyOf } from "../snapshot";
import { AcmeAnnotation, acmeIssuerOf, acmeNameProblem, acmeSecretName } from "../validation/acme";

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
}

export interface WantedName {
  /** The certificate Secret's namespace (the listener's). */
  readonly namespace: string;
  readonly name: string;
  readonly secretName: string;
  readonly issuerName: string;
  /** Undefined when the issuer is not declared (or cannot be used): `problem` says why. */
  readonly issuer?: IssuerSpec;
  readonly problem?: string;
  /** Gateways (namespace/name) whose listeners want this name, and the listeners. */
  readonly listeners: readonly { readonly gateway: string; readonly listener: string }[];
  /** Addresses of those Gateways (status.addresses), for the pre-validation self check. */
  readonly addresses: readonly string[];
  /** Whether one of the Gateways has an HTTP listener on port 80 (HTTP-01 needs one). */
  readonly http01Port: boolean;
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

function issuersOf(p: KengineParameters | undefined): IssuerSpec[] {
  const acme = p?.spec?.["acme"] as { issuers?: unknown } | undefined;
  if (!p || !Array.isArray(acme?.issuers)) return [];
  return (acme.issuers as unknown[]).flatMap(raw => {
    const i = raw as Record<string, unknown>;
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
        namespace: p.metadata.namespace ?? "",
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

type Ref = { group?: string; kind?: string; name?: string; namespace?: string } | undefined;
const paramsAt = (s: Snapshot, ref: Ref, ns: string | undefined): KengineParameters | undefined =>
  ref && ref.kind === "KengineParameters" && ref.name && ns
    ? s.objects.KengineParameters.get(`${ns}/${ref.name}`)
    : undefined;

/** Every name our Gateways' ACME listeners want, one entry per (namespace, name). */
export function wantedNames(s: Snapshot): WantedName[] {
  const byKey = new Map<string, { -readonly [K in keyof WantedName]: WantedName[K] }>();
  for (const gw of [...s.objects.Gateway.values()].sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : 1))) {
    const gc = s.objects.GatewayClass.get(gw.spec?.gatewayClassName ?? "");
    if (!isOurClass(gc)) continue;
    const ns = gw.metadata.namespace ?? "";
    const classRef = gc.spec.parametersRef as Ref;
    const gwRef = (gw.spec as { infrastructure?: { parametersRef?: Ref } }).infrastructure
      ?.parametersRef;
    const issuers = new Map<string, IssuerSpec>();
    for (const i of issuersOf(paramsAt(s, classRef, classRef?.namespace))) issuers.set(i.name, i);
    for (const i of issuersOf(paramsAt(s, gwRef, ns))) issuers.set(i.name, i);
    const listeners = gw.spec.listeners ?? [];
    const http01Port = listeners.some(l => l.protocol === "HTTP" && l.port === 80);
    const addresses = (
      (gw as { status?: { addresses?: { value?: string }[] } }).status?.addresses ?? []
    ).flatMap(a => (a.value ? [a.value] : []));
    for (const l of listeners) {
      const issuerName = acmeIssuerOf(l);
      if (issuerName === undefined || acmeNameProblem(l) || !l.hostname) continue;
      const key = `${ns}/${l.hostname}`;
      const issuer = issuers.get(issuerName);
      const problem = !issuer
        ? `issuer ${issuerName} is not declared in the KengineParameters of this Gateway or its class (spec.acme.issuers)`
        : (issuer.challenge ?? "http-01") !== "http-01"
          ? `challenge ${issuer.challenge} of issuer ${issuerName} is not supported: only http-01 is built`
          : undefined;
      const entry = byKey.get(key) ?? {
        namespace: ns,
        name: l.hostname,
        secretName: acmeSecretName(l.hostname),
        issuerName,
        ...(issuer && !problem ? { issuer } : {}),
        ...(problem ? { problem } : {}),
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

export function storedState(s: Snapshot, namespace: string, secretName: string): StoredState {
  const secret = s.objects.Secret.get(`${namespace}/${secretName}`);
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
