/**
 * The HTTPS listeners of an Ingress's `tls` entries (docs/ingress.md, "Mapping" and "Automatic
 * HTTPS"): one per host, certified by the entry's Secret, or, without one, by the ACME issuer
 * the Ingress (annotation) or its class names. Pure; problems are pushed with the Ingress's
 * field paths.
 */
import type { V1Ingress } from "@kubernetes/client-node";
import { items } from "../validation/budget";
import { ACME_ISSUER_OPTION, acmeNameProblem } from "../validation/acme";
import type { FieldProblem } from "../validation/regex";

export interface SyntheticListener {
  name: string;
  hostname?: string;
  port: number;
  protocol: "HTTPS";
  tls: {
    mode: "Terminate";
    certificateRefs?: { group: ""; kind: "Secret"; name: string }[];
    /** An ACME issuer instead of a Secret (validation/acme.ts ACME_ISSUER_OPTION). */
    options?: Record<string, string>;
  };
  allowedRoutes: { namespaces: { from: "Same" } };
}

/** The listeners of `ingress`'s `tls` entries, at most `max`. */
export function tlsListenersOf(
  ingress: V1Ingress,
  target: { readonly httpsPort?: number; readonly acmeIssuer?: string },
  max: number,
  problems: FieldProblem[],
): SyntheticListener[] {
  const listeners: SyntheticListener[] = [];
  const hostSeen = new Map<string, string>();
  items(ingress.spec?.tls).forEach((t, i) => {
    if (!t || typeof t !== "object") return;
    const secret = typeof t.secretName === "string" && t.secretName ? t.secretName : undefined;
    const own = ingress.metadata?.annotations?.[ACME_ISSUER_OPTION];
    const issuer = typeof own === "string" && own ? own : target.acmeIssuer;
    if (!secret && !issuer) {
      problems.push({
        path: `spec.tls[${i}].secretName`,
        value: "",
        message: `is required unless the IngressClass or the Ingress names an ACME issuer (annotation ${ACME_ISSUER_OPTION}): the entry is not served`,
      });
      return;
    }
    const listed = items(t.hosts);
    const hosts: readonly (string | undefined)[] = listed.length ? listed : [undefined];
    hosts.forEach((host, j) => {
      const where = listed.length ? `spec.tls[${i}].hosts[${j}]` : `spec.tls[${i}]`;
      const first = hostSeen.get(host ?? "");
      if (first !== undefined) {
        problems.push({
          path: where,
          value: host ?? "",
          message: `duplicates ${first}: the first entry's Secret is used`,
        });
        return;
      }
      hostSeen.set(host ?? "", where);
      const nameProblem = secret
        ? undefined
        : acmeNameProblem({ hostname: host, protocol: "HTTPS" });
      if (nameProblem) {
        problems.push({ path: where, value: host ?? "", message: `${nameProblem}; not served` });
        return;
      }
      if (listeners.length >= max) {
        problems.push({
          path: where,
          value: host ?? "",
          message: `more than ${max} TLS hosts in one Ingress: this one is not served`,
        });
        return;
      }
      listeners.push({
        name: `tls-${i}-${j}`,
        ...(host ? { hostname: host } : {}),
        port: target.httpsPort ?? 443,
        protocol: "HTTPS",
        tls: secret
          ? { mode: "Terminate", certificateRefs: [{ group: "", kind: "Secret", name: secret }] }
          : { mode: "Terminate", options: { [ACME_ISSUER_OPTION]: issuer! } },
        allowedRoutes: { namespaces: { from: "Same" } },
      });
    });
  });
  return listeners;
}
