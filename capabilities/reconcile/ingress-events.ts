/**
 * What could not be served of each Ingress of our classes, as Events on the Ingress
 * (docs/ingress.md): a Warning when its problems change to a new non-empty list, a Normal
 * Event when an Ingress reported before is served whole again. Decided here (pure), written by
 * events.ts EventRecorder.
 */
import { problemText } from "../validation/message";
import type { FieldProblem } from "../validation/regex";
import type { PushEvent } from "./events";

export const INGRESS_REF = { apiVersion: "networking.k8s.io/v1", kind: "Ingress" } as const;

export class IngressEvents {
  /** The problems last reported, by Ingress. */
  readonly #reported = new Map<string, string>();

  /** The Events this build's problems call for, by Ingress (`namespace/name`). */
  observe(ingresses: ReadonlyMap<string, readonly FieldProblem[]>): [string, PushEvent][] {
    const out: [string, PushEvent][] = [];
    for (const key of [...this.#reported.keys()])
      if (!ingresses.has(key)) this.#reported.delete(key);
    for (const [key, problems] of ingresses) {
      const text = problems.map(problemText).join("; ");
      const was = this.#reported.get(key);
      if (text === (was ?? "")) continue;
      if (text === "") {
        this.#reported.delete(key);
        out.push([
          key,
          {
            proxy: "",
            reason: "IngressServed",
            type: "Normal",
            note: "every rule of the Ingress is served",
          },
        ]);
        continue;
      }
      this.#reported.set(key, text);
      out.push([
        key,
        { proxy: "", reason: "IngressNotServed", type: "Warning", note: `not served: ${text}` },
      ]);
    }
    return out;
  }

  /** A new term: report again what is still wrong. */
  forget(): void {
    this.#reported.clear();
  }
}
