/**
 * What could not be served of each Ingress of our classes, as Events on the Ingress
 * (docs/ingress.md): a Warning when its problems change to a new non-empty list, a Normal
 * Event when an Ingress reported before is served whole again. The same for our IngressClasses
 * whose parameters do not resolve (CLASS_TEXTS). Decided here (pure), written by
 * events.ts EventRecorder.
 */
import { problemText } from "../validation/message";
import type { FieldProblem } from "../validation/regex";
import type { PushEvent } from "./events";

export const INGRESS_REF = { apiVersion: "networking.k8s.io/v1", kind: "Ingress" } as const;
export const INGRESS_CLASS_REF = {
  apiVersion: "networking.k8s.io/v1",
  kind: "IngressClass",
  clusterScoped: true,
} as const;

/** What the Events say: Ingresses (the default), or IngressClasses (`CLASS_TEXTS`). */
export interface EventTexts {
  readonly problem: PushEvent["reason"];
  readonly fixed: PushEvent["reason"];
  readonly fixedNote: string;
  readonly problemNote: (text: string) => string;
}

const INGRESS_TEXTS: EventTexts = {
  problem: "IngressNotServed",
  fixed: "IngressServed",
  fixedNote: "every rule of the Ingress is served",
  problemNote: text => `not served: ${text}`,
};

/** An IngressClass's parameters that do not resolve, and their repair. */
export const CLASS_TEXTS: EventTexts = {
  problem: "IngressClassProblem",
  fixed: "IngressClassResolved",
  fixedNote: "the class's parameters resolve",
  problemNote: text => text,
};

export class IngressEvents {
  /** The problems last reported, by Ingress. */
  readonly #reported = new Map<string, string>();

  constructor(private readonly texts: EventTexts = INGRESS_TEXTS) {}

  /** The Events this build's problems call for, by Ingress (`namespace/name`). */
  observe(ingresses: ReadonlyMap<string, readonly FieldProblem[]>): [string, PushEvent][] {
    return this.observeTexts(
      new Map([...ingresses].map(([key, problems]) => [key, problems.map(problemText).join("; ")])),
    );
  }

  /** The same, from each object's problems as one text ("": none). */
  observeTexts(objects: ReadonlyMap<string, string>): [string, PushEvent][] {
    const out: [string, PushEvent][] = [];
    for (const key of [...this.#reported.keys()]) if (!objects.has(key)) this.#reported.delete(key);
    for (const [key, text] of objects) {
      const was = this.#reported.get(key);
      if (text === (was ?? "")) continue;
      if (text === "") {
        this.#reported.delete(key);
        out.push([
          key,
          { proxy: "", reason: this.texts.fixed, type: "Normal", note: this.texts.fixedNote },
        ]);
        continue;
      }
      this.#reported.set(key, text);
      out.push([
        key,
        {
          proxy: "",
          reason: this.texts.problem,
          type: "Warning",
          note: this.texts.problemNote(text),
        },
      ]);
    }
    return out;
  }

  /** A new term: report again what is still wrong. */
  forget(): void {
    this.#reported.clear();
  }
}
