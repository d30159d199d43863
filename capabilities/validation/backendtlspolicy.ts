/**
 * Rules for BackendTLSPolicy, in two sets with one source each:
 *
 * - backendTLSPolicyProblems: what the proxy cannot run as written. Admission refuses a policy
 *   of ours with any of them (capabilities/admission.ts; "ours": a targetRef Service is a
 *   backend of a route of ours); the translator (translate/backendtls.ts) marks a stored one
 *   Accepted=False/Invalid and answers requests to the covered Service port with HTTP 500
 *   rather than connect with weaker checks.
 *     · validation.hostname an IPv4 address: the spec makes it the SNI, and TLS cannot carry
 *       an IP address as SNI (RFC 6066 §3): Go sends none and verifies IP SANs instead.
 *     · options: the proxy understands no backend TLS option yet (as for listener tls.options).
 * subjectAltNames are run by our transport kengine_http (proxy/santls), which only some
 * proxy flavours have (flavor/proxy-flavor.ts, capability backendSANs): which proxies reach
 * a Service is not a property of the policy, so they are admitted, and the translator marks
 * the policy Accepted=False/Invalid for an ancestor Gateway whose flavour lacks the transport.
 * - backendTLSPolicyStatusProblems: what the v1.6.1 spec says to report in the policy's status
 *   and so must never be refused: a wellKnownCACertificates other than System ("the
 *   implementation MUST ensure the Accepted Condition … is set to status: False, with a Reason
 *   Invalid"). Missing or wrong-kind caCertificateRefs (ResolvedRefs=False) are cross-object
 *   facts the translator reports itself.
 */
import { Collector } from "./budget";
import { FieldProblem, display, truncate } from "./regex";

export interface BackendTLSPolicyLike {
  readonly spec?: {
    readonly targetRefs?: readonly unknown[];
    readonly validation?: {
      readonly hostname?: string;
      readonly wellKnownCACertificates?: string;
      readonly subjectAltNames?: readonly unknown[];
      readonly caCertificateRefs?: readonly unknown[];
    };
    readonly options?: Readonly<Record<string, unknown>>;
  };
}

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;

/** What the proxy cannot run as written (refused at admission, Invalid in status). */
export function backendTLSPolicyProblems(
  p: BackendTLSPolicyLike,
  c = new Collector(),
): FieldProblem[] {
  const spec = p?.spec;
  const v = spec?.validation;
  const hostname = typeof v?.hostname === "string" ? v.hostname : undefined;
  if (hostname !== undefined && IPV4.test(hostname)) {
    c.add([
      {
        path: "spec.validation.hostname",
        value: hostname,
        message:
          "is an IP address, which TLS cannot send as SNI (RFC 6066): use a DNS name the backend's certificate holds",
      },
    ]);
  }
  const options = spec?.options;
  if (options && typeof options === "object" && !Array.isArray(options)) {
    for (const key of Object.keys(options).slice(0, 64)) {
      if (c.done || !c.spend("spec.options")) break;
      c.add([
        {
          path: `spec.options[${JSON.stringify(truncate(key, 48))}]`,
          value: display(options[key] ?? ""),
          message:
            "is not a backend TLS option the Kengine proxy understands (it supports none yet): remove it",
        },
      ]);
    }
  }
  return c.problems();
}

/** What the spec wants in the policy's status (Accepted=False/Invalid), never refused. */
export function backendTLSPolicyStatusProblems(p: BackendTLSPolicyLike): FieldProblem[] {
  const wellKnown = display(p?.spec?.validation?.wellKnownCACertificates ?? "");
  if (wellKnown === "" || wellKnown === "System") return [];
  return [
    {
      path: "spec.validation.wellKnownCACertificates",
      value: truncate(wellKnown),
      message: `${JSON.stringify(truncate(wellKnown))} is not supported; use System`,
    },
  ];
}
