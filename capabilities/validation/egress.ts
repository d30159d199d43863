/**
 * Egress: where a tenant's object may make the proxy connect (docs/operations.md §11). The
 * one set of rules admission (XBackend, KengineParameters, Gateway), provisioning and
 * translation (translate/egress.ts) share:
 *
 * - A hostname a tenant writes (XBackend `externalHostname.hostname`) is refused when it is
 *   loopback by definition (`localhost`, `*.localhost` (RFC 6761), the names every Linux
 *   /etc/hosts and Kubernetes' pod /etc/hosts give to loopback and link-scope addresses) or
 *   when a C resolver would read it as an IPv4 address (inet_aton: `2130706433`,
 *   `0x7f000001`, `127.1`, `0177.0.0.1`): compared in lower case, trailing dots removed.
 *   What resolves to such an address through DNS is the proxy's dial guard's to refuse
 *   (proxy/internal/egress, `egress_guard`): admission cannot know it.
 * - KengineParameters `spec.egress` (class level only): `externalHostnames` (Allowed or
 *   Denied, default Denied) switches ExternalHostname backends on for the class's Gateways;
 *   `deniedCIDRs` (at most 64) are ranges no tenant destination may reach, added to what the
 *   guard always denies.
 */
import { isIP } from "node:net";
import { FieldProblem, display, truncate } from "./regex";

/* ------------------------------------------------------------------ hostnames */

/**
 * Names that are loopback (or another address of the host itself) by definition: RFC 6761's
 * `localhost`, and the aliases of /etc/hosts on Debian, Red Hat and in Kubernetes pods.
 */
export const LOOPBACK_NAMES: readonly string[] = [
  "localhost",
  "localhost.localdomain",
  "localhost4",
  "localhost4.localdomain4",
  "localhost6",
  "localhost6.localdomain6",
  "ip6-localhost",
  "ip6-loopback",
  "ip6-localnet",
  "ip6-mcastprefix",
  "ip6-allnodes",
  "ip6-allrouters",
];

/** A label a C resolver reads as a number: decimal, octal (leading 0) or 0x-hexadecimal. */
const NUMERIC_LABEL = /^(?:0x[0-9a-f]*|[0-9]+)$/;

/** A DNS name as the XBackend CRD's pattern allows it (checked after canonicalHostname). */
const DNS_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** The name as resolvers compare it: lower case, without trailing dots. */
export const canonicalHostname = (hostname: string): string =>
  hostname.toLowerCase().replace(/\.+$/, "");

/**
 * Why the proxy must never be sent to `hostname` (a message naming the reason), or undefined.
 * IP literals are left to the caller (the XBackend spec forbids them with its own message).
 */
export function hostnameEgressProblem(hostname: string): string | undefined {
  const name = canonicalHostname(hostname);
  // Anything else ("[::1]", "a:2019", "%") would change what `host:port` dials.
  if (!DNS_NAME.test(name)) return "is not a DNS name (letters, digits, '-' and '.' only)";
  if (LOOPBACK_NAMES.includes(name) || name.endsWith(".localhost"))
    return "names the proxy's own host (a loopback name: localhost, *.localhost, ip6-localhost, ...): the proxy would connect to itself";
  // inet_aton reads 1 to 4 numeric parts; a numeric last label is never a DNS top-level
  // domain, so any name ending in one is refused (it is an address, or no valid name).
  const labels = name.split(".");
  if (NUMERIC_LABEL.test(labels[labels.length - 1]!))
    return "is read as an IP address by C resolvers (all-numeric, 0x-hexadecimal or octal parts such as 2130706433, 0x7f000001, 127.1): use a DNS name";
  return undefined;
}

/* ------------------------------------------------------------------ spec.egress */

export const EGRESS_FIELD = "egress";
export const MAX_DENIED_CIDRS = 64;
export type ExternalHostnames = "Allowed" | "Denied";

/** What a class's parameters say about egress, defaults applied. */
export interface EgressSettings {
  readonly externalHostnames: ExternalHostnames;
  /** As written (validated: each a CIDR with no bits beyond its prefix). */
  readonly deniedCIDRs: readonly string[];
}

export const DEFAULT_EGRESS: EgressSettings = { externalHostnames: "Denied", deniedCIDRs: [] };

const isObject = (v: unknown): v is Readonly<Record<string, unknown>> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** A parsed CIDR: the address as bytes and the prefix length. */
export interface Cidr {
  readonly bytes: readonly number[];
  readonly bits: number;
}

/** The bytes of an IP literal (IPv4: 4, IPv6: 16), or undefined. */
export function ipBytes(ip: string): number[] | undefined {
  const family = isIP(ip);
  if (family === 4) return ip.split(".").map(Number);
  if (family !== 6) return undefined;
  let text = ip;
  // An IPv6 address may end in an IPv4 one (::ffff:127.0.0.1).
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  let tail: number[] = [];
  if (v4) {
    tail = v4[1]!.split(".").map(Number);
    text = text.slice(0, -v4[1]!.length) + "0:0";
  }
  const [head, rest] = text.split("::") as [string, string | undefined];
  const groups = (s: string | undefined): number[] =>
    s
      ? s
          .split(":")
          .filter(g => g !== "")
          .map(g => parseInt(g, 16))
      : [];
  const h = groups(head);
  const r = groups(rest);
  const words =
    rest === undefined ? h : [...h, ...new Array<number>(8 - h.length - r.length).fill(0), ...r];
  const bytes = words.flatMap(w => [w >> 8, w & 0xff]);
  if (tail.length === 4) bytes.splice(12, 4, ...tail);
  return bytes;
}

/** A CIDR (`10.0.0.0/8`, `fd00::/8`), or why it is not one we accept. */
export function parseCidr(text: unknown): { ok: true; value: Cidr } | { ok: false; why: string } {
  if (typeof text !== "string") return { ok: false, why: "must be a string" };
  const m = /^([^/]+)\/(0|[1-9][0-9]{0,2})$/.exec(text);
  const bytes = m ? ipBytes(m[1]!) : undefined;
  if (!m || !bytes || m[1]!.includes("%"))
    return { ok: false, why: "is not a CIDR: an IPv4 or IPv6 address, '/', a prefix length" };
  const bits = Number(m[2]);
  if (bits > bytes.length * 8)
    return { ok: false, why: `prefix length must be at most ${bytes.length * 8}` };
  for (let i = 0; i < bytes.length * 8; i++)
    if (i >= bits && (bytes[i >> 3]! >> (7 - (i & 7))) & 1)
      return { ok: false, why: "has address bits set beyond its prefix length" };
  return { ok: true, value: { bytes, bits } };
}

/** Whether IP literal `ip` is inside `cidr` (an IPv4 address is not inside an IPv6 range). */
export function cidrContains(cidr: Cidr, ip: string): boolean {
  const b = ipBytes(ip);
  if (!b || b.length !== cidr.bytes.length) return false;
  for (let i = 0; i < cidr.bits; i++) {
    const bit = 7 - (i & 7);
    if (((b[i >> 3]! >> bit) & 1) !== ((cidr.bytes[i >> 3]! >> bit) & 1)) return false;
  }
  return true;
}

/** Shape problems of `spec.egress` (the CRD's rules, for objects stored some other way). */
export function egressParametersProblems(egress: unknown): FieldProblem[] {
  const at = `spec.${EGRESS_FIELD}`;
  if (egress === undefined) return [];
  const show = (v: unknown): string => truncate(display(v));
  if (!isObject(egress)) return [{ path: at, value: show(egress), message: "must be an object" }];
  const problems: FieldProblem[] = [];
  const mode = egress.externalHostnames;
  if (mode !== undefined && mode !== "Allowed" && mode !== "Denied")
    problems.push({
      path: `${at}.externalHostnames`,
      value: show(mode),
      message: "accepted: Allowed, Denied",
    });
  const list = egress.deniedCIDRs;
  if (list !== undefined) {
    if (!Array.isArray(list) || list.length > MAX_DENIED_CIDRS)
      problems.push({
        path: `${at}.deniedCIDRs`,
        value: show(list),
        message: `must be a list of at most ${MAX_DENIED_CIDRS} CIDRs`,
      });
    else
      list.forEach((c: unknown, i) => {
        const r = parseCidr(c);
        if (!r.ok)
          problems.push({ path: `${at}.deniedCIDRs[${i}]`, value: show(c), message: r.why });
      });
  }
  for (const k of Object.keys(egress).slice(0, 8))
    if (k !== "externalHostnames" && k !== "deniedCIDRs")
      problems.push({
        path: `${at}[${JSON.stringify(truncate(k, 48))}]`,
        value: truncate(k),
        message: "is not a field of egress (accepted: externalHostnames, deniedCIDRs)",
      });
  return problems;
}

/**
 * `spec.egress` in a Gateway's own parameters: refused, it has effect only in the parameters a
 * GatewayClass references (a tenant owning a Gateway must not switch its class's egress).
 */
export function gatewayEgressProblems(gatewaySpec: { readonly egress?: unknown } | undefined) {
  const egress = gatewaySpec?.egress;
  if (egress === undefined) return [];
  return [
    {
      path: `spec.${EGRESS_FIELD}`,
      value: truncate(display(egress)),
      message:
        "has effect only in the parameters a GatewayClass references; a Gateway's own parameters cannot set egress",
    },
  ];
}

/** The egress settings of a class's (valid) parameters spec, defaults applied. */
export function readEgress(classSpec: { readonly egress?: unknown } | undefined): EgressSettings {
  const e = classSpec?.egress;
  if (!isObject(e)) return DEFAULT_EGRESS;
  const list = Array.isArray(e.deniedCIDRs) ? e.deniedCIDRs : [];
  return {
    externalHostnames: e.externalHostnames === "Allowed" ? "Allowed" : "Denied",
    deniedCIDRs: list.filter((c): c is string => parseCidr(c).ok),
  };
}
