/**
 * XBackend (gateway.networking.x-k8s.io/v1alpha1, Gateway API v1.7.0 experimental): the one
 * reading of an XBackend's own fields that admission (its problems) and translation
 * (translate/xbackend.ts, which adds what other objects say) share, so both name the same
 * problems.
 *
 * Refused, with the field and the reason, because the proxy cannot run it:
 * - `tls.mode: ClientAndServer`: a proxy presents one client certificate per Gateway
 *   (Gateway `spec.tls.backend.clientCertificateRef`), not one per backend;
 * - `tls.validation.wellKnownCACertificates` other than `System` (the proxy's system trust);
 * - `externalHostname.hostname` that is an IP address (the spec forbids it; SNI needs a name),
 *   a loopback name or one a C resolver reads as an address (validation/egress.ts);
 * - `protocol: MCP` and `protocol: TCP` on HTTP routes are decided per route (translation);
 * - `sessionPersistence` the proxy cannot run (the route rule's rules, validation/session.ts).
 * What the CRD's own rules refuse (a type without its field, WSS/HTTP2 without TLS, H2C with
 * TLS, sessionPersistence on ExternalHostname) is refused here too, for clusters whose CRD
 * lacks those rules.
 */
import { isIP } from "node:net";
import { SessionIR } from "../ir";
import { FieldProblem, display } from "./regex";
import { readSessionPersistence } from "./session";
import { hostnameEgressProblem } from "./egress";

/** The fields of an XBackend's spec that are read (the generated type has all of them). */
export interface XBackendSpec {
  readonly type?: string;
  readonly externalHostname?: { readonly hostname?: string };
  readonly endpointSelector?: { readonly matchLabels?: Readonly<Record<string, string>> };
  readonly port?: { readonly number?: number };
  readonly protocol?: string;
  readonly tls?: {
    readonly mode?: string;
    readonly clientCertificateRef?: { readonly name: string; readonly namespace?: string };
    readonly validation?: {
      readonly hostname?: string;
      readonly caCertificateRefs?: readonly {
        readonly group?: string;
        readonly kind?: string;
        readonly name: string;
      }[];
      readonly wellKnownCACertificates?: string;
      readonly subjectAltNames?: readonly unknown[];
    };
  };
  readonly sessionPersistence?: unknown;
}

/** An XBackend as these rules read it (snapshot/types.ts XBackend is one). */
export interface XBackend {
  readonly metadata: { readonly uid?: string };
  readonly spec?: XBackendSpec;
}

export type XBackendProtocol = "HTTP" | "HTTP11" | "HTTP2" | "H2C" | "GRPC" | "MCP" | "TCP" | "WSS";
const PROTOCOLS: readonly string[] = [
  "HTTP",
  "HTTP11",
  "HTTP2",
  "H2C",
  "GRPC",
  "MCP",
  "TCP",
  "WSS",
];

/** What an XBackend asks for, once its own fields passed the rules. */
export interface XBackendReading {
  readonly target:
    | { readonly type: "ExternalHostname"; readonly hostname: string }
    | {
        readonly type: "EndpointSelector";
        readonly matchLabels: Readonly<Record<string, string>>;
      };
  readonly port: number;
  /** undefined: the route's protocol. */
  readonly protocol?: XBackendProtocol;
  /** TLS to the backend (mode ServerOnly); CA references are resolved by translation. */
  readonly tls?: {
    readonly hostname: string;
    readonly caCertificateRefs: readonly {
      readonly group?: string;
      readonly kind?: string;
      readonly name: string;
    }[];
    /** As written (translate/backendtls.ts sansOf reads them). */
    readonly subjectAltNames: readonly unknown[];
  };
  readonly session?: SessionIR;
}

export type XBackendResult =
  | { readonly ok: true; readonly value: XBackendReading }
  | { readonly ok: false; readonly problems: readonly FieldProblem[] };

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
/** A label map as written (string values only), or undefined. */
function labels(v: unknown): Readonly<Record<string, string>> | undefined {
  if (!v || typeof v !== "object" || Array.isArray(v)) return undefined;
  const entries = Object.entries(v as Record<string, unknown>);
  return entries.every(([, x]) => typeof x === "string")
    ? (v as Readonly<Record<string, string>>)
    : undefined;
}

/** Reads an XBackend: what it asks for, or every problem with it. */
export function readXBackend(xb: XBackend, defaultCookieName = "x"): XBackendResult {
  const spec = xb.spec ?? {};
  const problems: FieldProblem[] = [];
  const bad = (path: string, value: unknown, message: string): void => {
    problems.push({ path, value: display(value), message });
  };
  let target: XBackendReading["target"] | undefined;
  const type = spec.type;
  if (type === "ExternalHostname") {
    const hostname = str(spec.externalHostname?.hostname);
    if (!hostname) bad("spec.externalHostname.hostname", hostname ?? "", "is required");
    else if (isIP(hostname) !== 0)
      bad(
        "spec.externalHostname.hostname",
        hostname,
        "must be a DNS name, not an IP address (the spec forbids addresses here)",
      );
    else if (hostnameEgressProblem(hostname))
      bad("spec.externalHostname.hostname", hostname, hostnameEgressProblem(hostname)!);
    else target = { type, hostname };
    if (spec.endpointSelector !== undefined)
      bad("spec.endpointSelector", spec.endpointSelector, "must be unset for ExternalHostname");
  } else if (type === "EndpointSelector") {
    const matchLabels = labels(spec.endpointSelector?.matchLabels);
    if (!matchLabels || Object.keys(matchLabels).length === 0)
      bad(
        "spec.endpointSelector.matchLabels",
        matchLabels ?? "",
        "must name at least one label (an empty selector would select every pod)",
      );
    else target = { type, matchLabels };
    if (spec.externalHostname !== undefined)
      bad("spec.externalHostname", spec.externalHostname, "must be unset for EndpointSelector");
  } else bad("spec.type", type ?? "", "must be ExternalHostname or EndpointSelector");

  const port = spec.port?.number;
  if (port === undefined || !Number.isInteger(port) || port < 1 || port > 65535)
    bad("spec.port.number", port ?? "", "must be a port number (1-65535)");

  const protocol = spec.protocol;
  if (protocol !== undefined && !PROTOCOLS.includes(protocol))
    bad("spec.protocol", protocol, `must be one of ${PROTOCOLS.join(", ")}`);

  const mode = spec.tls === undefined || spec.tls === null ? "None" : (spec.tls.mode ?? "None");
  let tls: XBackendReading["tls"];
  if (mode === "ClientAndServer")
    bad(
      "spec.tls.mode",
      mode,
      "is not supported: a proxy presents one client certificate per Gateway (Gateway spec.tls.backend.clientCertificateRef), not one per backend",
    );
  else if (mode === "ServerOnly") {
    const v = spec.tls?.validation;
    const refs = Array.isArray(v?.caCertificateRefs) ? v.caCertificateRefs : [];
    const wellKnown = v?.wellKnownCACertificates;
    const sni = str(v?.hostname);
    if (!sni) bad("spec.tls.validation.hostname", v?.hostname ?? "", "is required");
    else if (isIP(sni) !== 0)
      bad("spec.tls.validation.hostname", sni, "must be a DNS name (it is sent as SNI)");
    if (wellKnown !== undefined && wellKnown !== "System")
      bad(
        "spec.tls.validation.wellKnownCACertificates",
        wellKnown,
        'is not supported: only "System" (the proxy\'s system trust store)',
      );
    if (refs.length > 0 === (wellKnown !== undefined))
      bad(
        "spec.tls.validation",
        "",
        "exactly one of caCertificateRefs and wellKnownCACertificates must be set",
      );
    if (sni)
      tls = {
        hostname: sni,
        caCertificateRefs: refs.filter(r => typeof r?.name === "string"),
        subjectAltNames: Array.isArray(v?.subjectAltNames) ? v.subjectAltNames : [],
      };
  } else if (mode !== "None")
    bad("spec.tls.mode", mode, "must be None, ServerOnly or ClientAndServer");

  if (mode === "None" && (protocol === "WSS" || protocol === "HTTP2"))
    bad("spec.tls", spec.tls ?? "", `must be enabled (mode ServerOnly) for protocol ${protocol}`);
  if (mode !== "None" && protocol === "H2C")
    bad("spec.tls.mode", mode, "must be None for protocol H2C (use HTTP2 for HTTP/2 over TLS)");

  let session: SessionIR | undefined;
  if (spec.sessionPersistence !== undefined && spec.sessionPersistence !== null) {
    if (type !== "EndpointSelector")
      bad(
        "spec.sessionPersistence",
        spec.sessionPersistence,
        "can only be set when type is EndpointSelector",
      );
    const r = readSessionPersistence(
      { sessionPersistence: spec.sessionPersistence },
      { at: "spec", defaultCookieName, secret: xb.metadata.uid ?? "" },
    );
    if (r.ok) session = r.value;
    else problems.push(...r.problems);
  }
  if (problems.length > 0 || !target || port === undefined) return { ok: false, problems };
  return {
    ok: true,
    value: {
      target,
      port,
      ...(protocol !== undefined && { protocol: protocol as XBackendProtocol }),
      ...(tls && { tls }),
      ...(session && { session }),
    },
  };
}

/** Admission: every problem of an XBackend (empty: the proxy can run it). */
export function xbackendProblems(xb: XBackend): readonly FieldProblem[] {
  const r = readXBackend(xb);
  return r.ok ? [] : r.problems;
}
