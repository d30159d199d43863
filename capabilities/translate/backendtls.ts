/**
 * BackendTLSPolicy (Gateway API v1.6.1, apis/v1/backendtlspolicy_types.go): which Service
 * ports the proxy must reach over TLS, with which SNI and which trust, and the policy's own
 * conditions. Derived from the snapshot only; the one state is a module-level memo of the
 * result per snapshot object (a WeakMap), which changes the cost, never the answer.
 *
 * - Precedence among policies naming the same Service and sectionName: oldest creation
 *   timestamp, then namespace/name; the others are `Accepted=False/Conflicted` and have no
 *   effect. A policy naming the port (sectionName) wins over one naming the whole Service.
 * - `caCertificateRefs`: core ConfigMaps holding PEM certificates under `ca.crt`; another
 *   kind is `InvalidKind`, a missing ConfigMap or unusable `ca.crt` `InvalidCACertificateRef`;
 *   all invalid: also `Accepted=False/NoValidCACertificate`.
 * - `wellKnownCACertificates: System`: the proxy's system trust store; any other value is
 *   `Accepted=False/Invalid`.
 * - What the proxy cannot run (validation/backendtlspolicy.ts, refused at admission for
 *   policies of ours): an IP address as hostname (no SNI), any `options`: such a policy is
 *   `Accepted=False/Invalid`.
 * - `subjectAltNames`: the certificate must carry one of them (hostname then only the SNI);
 *   run by our transport `kengine_http`, so on a Gateway whose proxy flavour lacks it
 *   (backendtls-status.ts) the policy is `Accepted=False/Invalid` for that ancestor and its Service
 *   gets HTTP 500 there.
 * Whenever the winning policy cannot be applied as written, requests to the Service port get
 * HTTP 500 rather than a connection with weaker verification (the spec asks for a 5xx).
 */
import { isTrustBundleRef, pemCertificates, trustBundleCertificates } from "./trustbundle";
import { BackendTLSPolicy, KubeObject, Service, ServicePort, Snapshot, keyOf } from "../snapshot";
import { Condition, ConditionType, condition } from "./conditions";
import {
  backendTLSPolicyProblems,
  backendTLSPolicyStatusProblems,
} from "../validation/backendtlspolicy";
import { problemText } from "../validation/message";

export const PolicyReason = {
  Accepted: "Accepted",
  Conflicted: "Conflicted",
  Invalid: "Invalid",
  NoValidCACertificate: "NoValidCACertificate",
  ResolvedRefs: "ResolvedRefs",
  InvalidCACertificateRef: "InvalidCACertificateRef",
  InvalidKind: "InvalidKind",
} as const;

/** How the proxy connects to one Service port a policy covers. */
export interface BackendTLS {
  /** SNI and the name the backend's certificate must match. */
  readonly serverName: string;
  /** Trusted CA certificates, base64 DER; undefined: the proxy's system trust store. */
  readonly caCertificates?: readonly string[];
  /** subjectAltNames: the certificate must carry one of them. */
  readonly subjectAltNames?: { readonly dns: readonly string[]; readonly uri: readonly string[] };
}

export type BackendTLSDecision =
  | { readonly policy: string; readonly ok: true; readonly tls: BackendTLS }
  | { readonly policy: string; readonly ok: false; readonly message: string };

interface Evaluated {
  readonly policy: BackendTLSPolicy;
  readonly conditions: readonly Condition[];
  readonly decision: BackendTLSDecision;
}

export interface BackendTLSPolicies {
  /** The policy decision for a Service port, if a policy covers it. */
  forServicePort(svc: Service, port: ServicePort): BackendTLSDecision | undefined;
  /** Every policy (`<namespace>/<name>`) naming the Service port or the whole Service, conflicted ones too. */
  covering(svc: Service, port: ServicePort): readonly string[];
  /** The conditions of policy `<namespace>/<name>` (Accepted, ResolvedRefs). */
  conditions(policy: string): readonly Condition[];
}

const cache = new WeakMap<Snapshot, BackendTLSPolicies>();

export function backendTLSPolicies(s: Snapshot): BackendTLSPolicies {
  let v = cache.get(s);
  if (!v) {
    v = evaluate(s);
    cache.set(s, v);
  }
  return v;
}

/** Policy precedence (GEP-713): the older first, then by `<namespace>/<name>`. */
export const older = (a: KubeObject, b: KubeObject): number => {
  const ta = a.metadata.creationTimestamp ?? "";
  const tb = b.metadata.creationTimestamp ?? "";
  if (ta !== tb) return ta < tb ? -1 : 1;
  return keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0;
};

function evaluate(s: Snapshot): BackendTLSPolicies {
  const policies = [...s.objects.BackendTLSPolicy.values()].sort(older);
  // target `<ns>/<service>#<sectionName or "">` → winning policy key (the oldest).
  const winners = new Map<string, string>();
  const conflicted = new Set<string>();
  const all = new Map<string, string[]>();
  for (const p of policies) {
    const ns = p.metadata.namespace ?? "";
    for (const t of p.spec?.targetRefs ?? []) {
      if ((t.group ?? "") !== "" || t.kind !== "Service") continue;
      const target = `${ns}/${t.name}#${t.sectionName ?? ""}`;
      all.set(target, [...(all.get(target) ?? []), keyOf(p)]);
      const w = winners.get(target);
      if (w === undefined) winners.set(target, keyOf(p));
      else if (w !== keyOf(p)) conflicted.add(keyOf(p));
    }
  }
  const evaluated = new Map<string, Evaluated>();
  for (const p of policies) evaluated.set(keyOf(p), evaluateOne(s, p, conflicted.has(keyOf(p))));
  return {
    forServicePort(svc: Service, port: ServicePort): BackendTLSDecision | undefined {
      const ns = svc.metadata.namespace ?? "";
      const key =
        winners.get(`${ns}/${svc.metadata.name}#${port.name ?? ""}`) ??
        winners.get(`${ns}/${svc.metadata.name}#`);
      if (key === undefined) return undefined;
      return evaluated.get(key)?.decision;
    },
    covering(svc: Service, port: ServicePort): readonly string[] {
      const base = `${svc.metadata.namespace ?? ""}/${svc.metadata.name}#`;
      return [
        ...(all.get(`${base}${port.name ?? ""}`) ?? []),
        ...(port.name ? (all.get(base) ?? []) : []),
      ];
    },
    conditions(policy: string): readonly Condition[] {
      return evaluated.get(policy)?.conditions ?? [];
    },
  };
}

function evaluateOne(s: Snapshot, p: BackendTLSPolicy, isConflicted: boolean): Evaluated {
  const gen = p.metadata.generation;
  const key = keyOf(p);
  const ns = p.metadata.namespace ?? "";
  const v = p.spec?.validation;
  const refs = v?.caCertificateRefs ?? [];
  const { cas, problems: refProblems } = caCertificatesOf(s, ns, refs);
  const resolved =
    refProblems.length === 0
      ? condition(
          ConditionType.ResolvedRefs,
          true,
          PolicyReason.ResolvedRefs,
          "all references resolved",
          gen,
        )
      : condition(
          ConditionType.ResolvedRefs,
          false,
          refProblems[0].reason,
          refProblems.map(r => r.message).join("; "),
          gen,
        );
  const reject = (reason: string, message: string): Evaluated => ({
    policy: p,
    conditions: [condition(ConditionType.Accepted, false, reason, message, gen), resolved],
    decision: { policy: key, ok: false, message },
  });
  if (isConflicted) {
    // Its status says Conflicted; where it still is the oldest (another target), it applies.
    return {
      policy: p,
      conditions: [
        condition(
          ConditionType.Accepted,
          false,
          PolicyReason.Conflicted,
          "an older BackendTLSPolicy targets the same Service port",
          gen,
        ),
        resolved,
      ],
      decision: evaluateOne(s, p, false).decision,
    };
  }
  // What the spec puts in status, then what the proxy cannot run (admission refuses those):
  // the shared rules (validation/backendtlspolicy.ts).
  const problems = [...backendTLSPolicyStatusProblems(p), ...backendTLSPolicyProblems(p)];
  if (problems.length > 0) {
    return reject(PolicyReason.Invalid, problems.map(problemText).join("; "));
  }
  const sans = subjectAltNames(p);
  if (refs.length > 0 && cas.length === 0) {
    return reject(
      PolicyReason.NoValidCACertificate,
      "no caCertificateRef holds a usable CA certificate",
    );
  }
  const accepted = condition(
    ConditionType.Accepted,
    true,
    PolicyReason.Accepted,
    "policy accepted",
    gen,
  );
  if (refProblems.length > 0) {
    // Accepted, but connections that would rely on it fail (spec: HTTP 5xx).
    return {
      policy: p,
      conditions: [accepted, resolved],
      decision: { policy: key, ok: false, message: resolved.message },
    };
  }
  return {
    policy: p,
    conditions: [accepted, resolved],
    decision: {
      policy: key,
      ok: true,
      tls: {
        serverName: v?.hostname ?? "",
        ...(refs.length > 0 && { caCertificates: cas }),
        ...(sans && { subjectAltNames: sans }),
      },
    },
  };
}

/**
 * The CA certificates (base64 DER) that `caCertificateRefs` written in namespace `ns` name:
 * core ConfigMaps (PEM under `ca.crt`) and ClusterTrustBundles, with a problem (reason, message)
 * per reference that does not resolve. BackendTLSPolicy and XBackend share it.
 */
export function caCertificatesOf(
  s: Snapshot,
  ns: string,
  refs: readonly { readonly group?: string; readonly kind?: string; readonly name: string }[],
): { cas: string[]; problems: { reason: string; message: string }[] } {
  const refProblems: { reason: string; message: string }[] = [];
  const cas: string[] = [];
  for (const ref of refs) {
    const id = `${ns}/${ref.name}`;
    if (isTrustBundleRef(ref)) {
      const bundle = trustBundleCertificates(s, { name: ref.name });
      if (bundle.ok) cas.push(...bundle.value);
      else
        refProblems.push({ reason: PolicyReason.InvalidCACertificateRef, message: bundle.error });
      continue;
    }
    if ((ref.group ?? "") !== "" || ref.kind !== "ConfigMap") {
      refProblems.push({
        reason: PolicyReason.InvalidKind,
        message: `caCertificateRef ${ref.kind}.${ref.group || "core"} ${id}: only core ConfigMaps and ClusterTrustBundles are supported`,
      });
      continue;
    }
    const cm = s.objects.ConfigMap.get(id);
    const pem = cm?.data?.["ca.crt"];
    if (!cm) {
      refProblems.push({
        reason: PolicyReason.InvalidCACertificateRef,
        message: `ConfigMap ${id} not found`,
      });
      continue;
    }
    const parsed = pem === undefined ? [] : pemCertificates(pem);
    if (parsed.length === 0) {
      refProblems.push({
        reason: PolicyReason.InvalidCACertificateRef,
        message: `ConfigMap ${id} has no PEM certificate under ca.crt`,
      });
      continue;
    }
    cas.push(...parsed);
  }
  return { cas, problems: refProblems };
}

/** The policy's subjectAltNames by type; undefined when it has none. */
export function subjectAltNames(p: BackendTLSPolicy): { dns: string[]; uri: string[] } | undefined {
  return sansOf(p.spec?.validation?.subjectAltNames ?? []);
}

/** subjectAltNames as written (BackendTLSPolicy, XBackend) by type; undefined when none. */
export function sansOf(written: readonly unknown[]): { dns: string[]; uri: string[] } | undefined {
  const list = written as readonly {
    type?: string;
    hostname?: string;
    uri?: string;
  }[];
  const dns = list.filter(n => n.type === "Hostname" && n.hostname).map(n => n.hostname!);
  const uri = list.filter(n => n.type === "URI" && n.uri).map(n => n.uri!);
  return dns.length + uri.length > 0 ? { dns, uri } : undefined;
}

/** Re-exported for importers of this module. */
export { pemCertificates };
