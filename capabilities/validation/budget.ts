/**
 * Bounds the work of one validation: an object may be hostile (a 1 MB regular expression, ten
 * thousand rules, values nested in odd places), and the webhook must answer within its
 * timeout whatever it is sent. A Collector gathers problems (all of them, up to
 * MAX_PROBLEMS) and charges every inspected value to a budget of values and characters; once
 * either runs out, checking stops and the object is refused with a problem saying so.
 *
 * The budgets are far above anything the API server stores (its request limit is 3 MiB), so
 * they never refuse an object that could exist; they only bound the time spent on one that
 * could not.
 */
import { FieldProblem } from "./regex";

/** At most this many problems are reported (the message must stay readable). */
export const MAX_PROBLEMS = 32;
/** At most this many values are inspected per object. */
export const MAX_VALUES = 50_000;
/** At most this many characters of regular expressions are parsed per object. */
export const MAX_CHARACTERS = 256 * 1024;

export class Collector {
  private readonly list: FieldProblem[] = [];
  private values = 0;
  private characters = 0;
  private stopped = false;

  constructor(
    private readonly limits = {
      problems: MAX_PROBLEMS,
      values: MAX_VALUES,
      characters: MAX_CHARACTERS,
    },
  ) {}

  /** True once a budget ran out: callers stop walking. */
  get done(): boolean {
    return this.stopped;
  }

  /**
   * Charges the inspection of one value at `path`, plus `regexCharacters` when it is a
   * regular expression. False (and checking stops) when the budget does not cover it.
   */
  spend(path: string, regexCharacters = 0): boolean {
    if (this.stopped) return false;
    this.values += 1;
    this.characters += regexCharacters;
    if (this.values > this.limits.values || this.characters > this.limits.characters) {
      this.stop({
        path,
        value: "",
        message: `the object is too large to check (more than ${this.limits.values} values or ${this.limits.characters} characters of regular expressions); nothing from this field on was checked`,
      });
      return false;
    }
    return true;
  }

  add(problems: readonly FieldProblem[]): void {
    for (const p of problems) {
      if (this.stopped) return;
      if (this.list.length >= this.limits.problems) {
        this.stop({
          path: p.path,
          value: "",
          message: `more than ${this.limits.problems} problems; the rest were not checked`,
        });
        return;
      }
      this.list.push(p);
    }
  }

  problems(): FieldProblem[] {
    return [...this.list];
  }

  private stop(last: FieldProblem): void {
    this.list.push(last);
    this.stopped = true;
  }
}

/** The elements of a field that should be an array; anything else counts as empty. */
export const items = <T>(v: readonly T[] | undefined | null): readonly T[] =>
  Array.isArray(v) ? v : [];
