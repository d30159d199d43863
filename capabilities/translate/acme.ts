/**
 * Listeners with an automatic certificate (validation/acme.ts): the issuer comes from the
 * GatewayClass's parameters when granted to the Gateway's namespace (acme/issuers.ts), the
 * certificate from the Secret the ACME manager keeps for the listener's hostname in the
 * Gateway's namespace, and the listener's status says what the manager last wrote there
 * (pending, the CA's error word for word, renewal time). Only the Gateway's own listeners and
 * the listeners the Ingress stage made for it get either (docs/ingress.md, "Automatic HTTPS"),
 * and HTTP-01 answers are read only from the Secrets the manager writes.
 * Pure: everything comes from the snapshot.
 */
import { issuerFor } from "../acme/issuers";
import { CertificateIR, GatewayIR, HTTPRouteEntryIR } from "../ir";
import { Gateway, Listener, Secret, Snapshot } from "../snapshot";
import {
  AcmeAnnotation,
  HTTP01_PREFIX,
  acmeIssuerOf,
  acmeNameProblem,
  acmeSecretName,
  foreignSecretMessage,
  isCertificateSecretFor,
  isIngressAcmeListener,
  storedChallenges,
} from "../validation/acme";
import { checkKeyPair } from "../validation/keypair";
import { ListenerReason } from "./conditions";

export interface AcmeListenerResult {
  /** ResolvedRefs=False (no certificate and the CA refused, or the name cannot be ordered). */
  readonly resolvedRefs?: { readonly reason: string; readonly message: string };
  /** Not programmed yet: Programmed=False, reason Pending, with this message. */
  readonly pending?: string;
  /** ResolvedRefs=True's message: who issued the certificate and when it renews. */
  readonly note?: string;
}

const decode = (b64: string | undefined): string =>
  b64 === undefined ? "" : Buffer.from(b64, "base64").toString("utf8");

/**
 * A listener of `gw`'s own spec that names `issuer`, or one the Ingress stage made for `gw`
 * (validation/acme.ts isIngressAcmeListener), whose issuer grant is checked against
 * `grantNamespace` (the Ingress's); other ListenerSet listeners get none.
 */
export function acmeListener(
  s: Snapshot,
  gw: Gateway,
  l: Listener,
  issuer: string,
  into: CertificateIR[],
  grantNamespace: string = gw.metadata.namespace ?? "",
): AcmeListenerResult {
  const problem = acmeNameProblem(l);
  if (problem)
    return { resolvedRefs: { reason: ListenerReason.InvalidCertificateRef, message: problem } };
  const resolved = issuerFor(s, gw, issuer, grantNamespace);
  if (!resolved.ok)
    return {
      resolvedRefs: {
        reason:
          resolved.reason === "NotGranted"
            ? ListenerReason.RefNotPermitted
            : ListenerReason.InvalidCertificateRef,
        message: resolved.message,
      },
    };
  const name = l.hostname!;
  const id = `${gw.metadata.namespace ?? ""}/${acmeSecretName(name)}`;
  const secret: Secret | undefined = s.objects.Secret.get(id);
  if (secret && !isCertificateSecretFor(secret, name))
    return {
      resolvedRefs: {
        reason: ListenerReason.InvalidCertificateRef,
        message: foreignSecretMessage(id),
      },
    };
  const a = secret?.metadata.annotations ?? {};
  const state = a[AcmeAnnotation.state];
  const said = a[AcmeAnnotation.message];
  const crt = decode(secret?.data?.["tls.crt"]);
  const key = decode(secret?.data?.["tls.key"]);
  if (crt === "" || key === "") {
    if (state === "Failed")
      return {
        resolvedRefs: {
          reason: ListenerReason.InvalidCertificateRef,
          message: `ACME issuer ${issuer} could not issue a certificate for ${name}: ${said ?? "unknown error"}`,
        },
      };
    return {
      pending: `certificate pending: ${said ?? `no ACME order yet for ${name} (issuer ${issuer})`}`,
    };
  }
  const pair = checkKeyPair(crt, key);
  if (!pair.ok)
    return {
      resolvedRefs: {
        reason: ListenerReason.InvalidCertificateRef,
        message: `Secret ${id} cannot be served: ${pair.error}`,
      },
    };
  if (!into.some(c => c.id === id)) into.push({ id, certificatePem: crt, keyPem: key });
  const renew = a[AcmeAnnotation.renewAt];
  const notAfter = a[AcmeAnnotation.notAfter];
  const base = `certificate for ${name} issued by ACME issuer ${a[AcmeAnnotation.issuer] ?? issuer} (Secret ${id})${notAfter ? `, valid until ${notAfter}` : ""}${renew ? `, renews at ${renew}` : ""}`;
  if (state === "Failed")
    return {
      note: `${base}; renewal failing, the current certificate keeps serving: ${said ?? "unknown error"}`,
    };
  if (state === "Pending") return { note: `${base}; renewal under way: ${said ?? ""}` };
  return { note: base };
}

/** Whether a listener hostname (exact, `*.` wildcard or none) covers `name`. */
const covers = (listenerHost: string | undefined, name: string): boolean =>
  listenerHost === undefined ||
  listenerHost === name ||
  (listenerHost.startsWith("*.") && name.endsWith(listenerHost.slice(1)));

/**
 * The HTTP-01 answers of the Gateway's ACME names, first on every port-80 HTTP listener that
 * covers the name: the CA reaches whichever proxy its connection lands on, so every proxy of
 * the fleet gets them in the config it is pushed. Answers come only for hostnames of the
 * Gateway's own listeners (and the Ingress stage's granted ones) whose issuer is granted, and
 * only from the Secret the manager writes for that hostname in the Gateway's namespace (labels
 * and name annotation checked): a tenant's ListenerSet listener or another namespace's Secret
 * never puts an answer on the proxies.
 */
export function withHttp01Answers(
  s: Snapshot,
  gw: Gateway,
  listeners: readonly {
    readonly owner: { readonly kind: string; readonly namespace?: string };
    readonly listener: Listener;
  }[],
  ir: GatewayIR,
): GatewayIR {
  const namespace = gw.metadata.namespace ?? "";
  const answers: { name: string; token: string; keyAuthorization: string }[] = [];
  const seen = new Set<string>();
  const own = new Set(
    (gw.spec.listeners ?? []).flatMap(l => (l.hostname ? [l.hostname.toLowerCase()] : [])),
  );
  for (const { owner, listener } of listeners) {
    const fromIngress = owner.kind === "ListenerSet" && isIngressAcmeListener(listener);
    if (owner.kind !== "Gateway" && !fromIngress) continue;
    if (fromIngress && own.has(listener.hostname?.toLowerCase() ?? "")) continue;
    const name = listener.hostname;
    const issuer = acmeIssuerOf(listener);
    if (issuer === undefined || !name || acmeNameProblem(listener)) continue;
    if (seen.has(name.toLowerCase())) continue;
    seen.add(name.toLowerCase());
    const grantNamespace = fromIngress ? (owner.namespace ?? "") : namespace;
    if (!issuerFor(s, gw, issuer, grantNamespace).ok) continue;
    const secret = s.objects.Secret.get(`${namespace}/${acmeSecretName(name)}`);
    if (!isCertificateSecretFor(secret, name)) continue;
    for (const [token, keyAuthorization] of storedChallenges(secret?.metadata.annotations))
      answers.push({ name, token, keyAuthorization });
  }
  if (answers.length === 0) return ir;
  answers.sort((a, b) => (`${a.name} ${a.token}` < `${b.name} ${b.token}` ? -1 : 1));
  const entry = (a: (typeof answers)[number], i: number): HTTPRouteEntryIR => ({
    route: {
      kind: "HTTPRoute",
      namespace: ir.namespace,
      name: "kengine-acme-http01",
      rule: 0,
      match: i,
    },
    match: {
      hostname: a.name,
      path: { type: "Exact", value: `${HTTP01_PREFIX}${a.token}` },
      headers: [],
      queryParams: [],
    },
    action: { type: "respond", status: 200, body: a.keyAuthorization },
  });
  return {
    ...ir,
    httpServers: ir.httpServers.map(server =>
      server.port !== 80 || server.protocol !== "HTTP"
        ? server
        : {
            ...server,
            listeners: server.listeners.map(l => {
              const mine = answers.flatMap((a, i) =>
                covers(l.hostname, a.name) ? [entry(a, i)] : [],
              );
              return mine.length === 0 ? l : { ...l, routes: [...mine, ...l.routes] };
            }),
          },
    ),
  };
}
