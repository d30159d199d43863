/**
 * Keeps a Gateway's IR object from the previous build when the new translation of that Gateway
 * is equal to it: the sealed-config cache (plan.ts, keyed by IR object) then
 * hits, so only Gateways a change touched are rendered, sealed and handed to the push engine.
 * Equality is structural over the IR's JSON-like data, so the output is byte-identical to a
 * full build by construction (plan.ts renders only from the IR).
 */
import type { GatewayIR } from "../ir";
import { sameData } from "../same-data";
import type { Snapshot } from "../snapshot";
import { TranslateOptions, TranslateResult, translate } from "../translate";
import { StatusEchoes } from "../translate/incremental";

export interface Reused {
  /** The new translation's Gateways, each replaced by the previous IR object when equal. */
  readonly gateways: readonly GatewayIR[];
  /** "namespace/name" of the Gateways whose IR changed (or is new). */
  readonly changed: readonly string[];
}

const keyOf = (ir: GatewayIR) => `${ir.namespace}/${ir.name}`;

/** The previous build's IR per Gateway, and the step that reuses it. */
export class IrReuse {
  #previous = new Map<string, GatewayIR>();

  reuse(gateways: readonly GatewayIR[]): Reused {
    const next = new Map<string, GatewayIR>();
    const changed: string[] = [];
    const out = gateways.map(ir => {
      const key = keyOf(ir);
      const before = this.#previous.get(key);
      const kept = before !== undefined && (before === ir || sameData(before, ir)) ? before : ir;
      if (kept !== before) changed.push(key);
      next.set(key, kept);
      return kept;
    });
    this.#previous = next;
    return { gateways: out, changed };
  }
}

/** One translation with reuse: the result, and how many Gateways were translated and reused. */
export interface IncrementalResult {
  readonly result: TranslateResult;
  readonly translated: number;
  readonly reused: number;
}

/**
 * The translate stage of a build: translate() of the snapshot, each unchanged Gateway's IR
 * replaced by the previous build's object (IrReuse). The result equals translate()'s.
 */
export class IncrementalTranslator {
  readonly #reuse = new IrReuse();
  readonly #echoes = new StatusEchoes();

  translate(snapshot: Snapshot, options: TranslateOptions): IncrementalResult {
    const t = translate(snapshot, { ...options, statusEchoes: this.#echoes });
    const { gateways, changed } = this.#reuse.reuse(t.gateways);
    return {
      result: { ...t, gateways },
      translated: gateways.length,
      reused: gateways.length - changed.length,
    };
  }
}
