/**
 * Rules for Gateway and ListenerSet listeners: values no proxy of ours can run, whatever else
 * is in the cluster. Admission refuses them; the translator (translate/listeners.ts) calls the
 * same function and marks such a listener Accepted=False (PortUnavailable for a reserved port,
 * UnsupportedValue otherwise).
 *
 * Not checked here (the spec wants them in listener status): conflicts between listeners,
 * missing or unusable certificates, unsupported protocols and route kinds, refused
 * ListenerSets.
 */
import { RESERVED_PORTS } from "../proxies/pod";
import { Collector, items } from "./budget";
import { FieldProblem, display, truncate } from "./regex";

export interface ListenerLike {
  readonly name?: string;
  readonly port?: number;
  readonly tls?: { readonly options?: Readonly<Record<string, string>> };
}
export interface GatewayLike {
  readonly spec?: { readonly listeners?: readonly ListenerLike[] };
}

/** The problems of one listener at `at` (e.g. `spec.listeners[0]`). */
export function listenerProblems(at: string, l: ListenerLike, c = new Collector()): FieldProblem[] {
  if (typeof l?.port === "number" && RESERVED_PORTS.includes(l.port)) {
    c.add([
      {
        path: `${at}.port`,
        value: String(l.port),
        message: `is reserved by the Kengine proxy pod (admin, management and readiness use ${RESERVED_PORTS.join(", ")}): choose another port`,
      },
    ]);
  }
  const options = l?.tls?.options;
  if (options && typeof options === "object") {
    for (const key of Object.keys(options).slice(0, 64)) {
      if (!c.spend(`${at}.tls.options`)) break;
      c.add([
        {
          path: `${at}.tls.options[${JSON.stringify(truncate(key, 48))}]`,
          value: display(options[key] ?? ""),
          message:
            "is not a TLS option the Kengine proxy understands (it supports none yet): remove it",
        },
      ]);
    }
  }
  return c.problems();
}

/** Every listener problem of a Gateway or ListenerSet (both keep listeners in spec.listeners). */
export function gatewayProblems(obj: GatewayLike, c = new Collector()): FieldProblem[] {
  items(obj.spec?.listeners).forEach((l, i) => {
    if (!c.done) listenerProblems(`spec.listeners[${i}]`, l, c);
  });
  return c.problems();
}
