/**
 * Rules for BackendTLSPolicy: what the proxy cannot verify. Used by the translator
 * (translate/backendtls.ts), which marks such a policy Accepted=False/Invalid and answers
 * requests to the covered Service port with HTTP 500 rather than connect with weaker checks.
 *
 * Not used by admission: a policy targets Services, not Gateways, so whether it concerns our
 * proxies is known only from the routes using those Services, which admission cannot afford
 * to look up; and another implementation in the same cluster may verify subjectAltNames, so
 * refusing them cluster-wide would break it. The policy's status reports the problem.
 */
import { FieldProblem, display, truncate } from "./regex";

export interface BackendTLSPolicyLike {
  readonly spec?: {
    readonly validation?: {
      readonly wellKnownCACertificates?: string;
      readonly subjectAltNames?: readonly unknown[];
    };
  };
}

export function backendTLSPolicyProblems(p: BackendTLSPolicyLike): FieldProblem[] {
  const v = p.spec?.validation;
  const problems: FieldProblem[] = [];
  const wellKnown = display(v?.wellKnownCACertificates ?? "");
  if (wellKnown !== "" && wellKnown !== "System") {
    problems.push({
      path: "spec.validation.wellKnownCACertificates",
      value: wellKnown,
      message: `${JSON.stringify(wellKnown)} is not supported; use System`,
    });
  }
  if (Array.isArray(v?.subjectAltNames) && v.subjectAltNames.length > 0) {
    problems.push({
      path: "spec.validation.subjectAltNames",
      value: truncate(display(v.subjectAltNames)),
      message:
        "subjectAltNames are not supported by the proxy: it verifies the certificate against hostname only",
    });
  }
  return problems;
}
