/**
 * Regular-expression rules shared by admission and translation. Kengine/Caddy evaluate
 * path and header regular expressions with Go's RE2 engine (package regexp, Perl flags), so
 * the verdict here mirrors Go's parser (regexp/syntax): the same grammar, the same escape
 * and class rules, the same limits (repeat counts ≤ 1000, also for nested counts; parse
 * tree height ≤ 1000; compiled size ≤ 128 MiB / 40 B). It is proven equal to real Caddy by
 * tests/integration/re2-differential.test.ts.
 *
 * Two deliberate, documented differences, both towards refusing:
 * - Portability: Kengine is Caddy 2.8 built with Go 1.22, whose regexp knows only the exact
 *   Unicode category and script names (`\p{L}`, `\p{Greek}`, `\p{Any}`). Newer Go also takes
 *   `\p{Letter}`, `\p{latin}`, `\p{ASCII}`, `\p{Assigned}`, `\p{LC}`; we refuse those so a
 *   config never depends on the proxy's Go version.
 * - Length: more than 4,096 characters is refused outright (no Gateway API regex field may be
 *   longer), so hostile input is judged in time linear in at most that many characters.
 *
 * The translator embeds a route's expression as `^(?:X)$`; an unterminated `\Q` would
 * swallow that suffix, so it is refused too (the size and height limits are applied to the
 * embedded form).
 */
import { truncate } from "./field-problem";
import {
  RE2Error,
  fail,
  MAX_REPEAT,
  MAX_HEIGHT,
  MAX_SIZE,
  MAX_RUNE,
  type Node,
  node,
  leaf,
  isClassLike,
  nestedRepeatsValid,
  type Frame,
  POSIX_CLASSES,
  UNICODE_NAMES,
  isDigit,
  isAlnum,
  hexValue,
} from "./re2-tree";

/** The longest regular expression we accept (Gateway API: header values ≤ 4096, paths ≤ 1024). */
export const MAX_REGEX_LENGTH = 4096;

/** Why `re` cannot run in the proxy (as the translator embeds it), or undefined when it can. */
export function re2Problem(re: string): string | undefined {
  if (re.length > MAX_REGEX_LENGTH) {
    return `is ${re.length} characters long; at most ${MAX_REGEX_LENGTH} are accepted`;
  }
  try {
    const tree = new Parser(re).parse();
    // The translator's `^(?:X)$`: a concatenation root is flattened into the outer one.
    const height = tree.kind === "concat" ? tree.height : tree.height + 1;
    if (height > MAX_HEIGHT) return "nests too deeply for RE2 (parse tree height above 1000)";
    if (tree.size + 2 > MAX_SIZE)
      return "is too large for RE2 once compiled (repetition counts multiply its size)";
    return undefined;
  } catch (e: unknown) {
    if (e instanceof RE2Error) return e.message;
    throw e;
  }
}

/* ------------------------------------------------------------------ the parser */

/**
 * A single-pass parser over `re` with an explicit stack (no recursion), building the
 * parts of Go's parse tree that its limits depend on. Throws RE2Error on the first problem.
 */
class Parser {
  private i = 0;
  private readonly frames: Frame[] = [{ items: [], alts: [], capture: false }];
  /** Whether the previous token was a repetition operator (Go refuses `a**`, `a{2}*`, `a*?+`). */
  private lastRepeat = false;

  constructor(private readonly re: string) {}

  parse(): Node {
    const re = this.re;
    while (this.i < re.length) {
      const c = re[this.i];
      let repeated = false;
      switch (c) {
        case "(":
          this.openGroup();
          break;
        case "|":
          this.closeAlternative();
          this.i++;
          break;
        case ")":
          this.closeGroup();
          this.i++;
          break;
        case "^":
        case "$":
          this.push(leaf());
          this.i++;
          break;
        case ".":
          this.push(node("class", []));
          this.i++;
          break;
        case "[":
          this.parseClass();
          this.push(node("class", []));
          break;
        case "*":
        case "+":
        case "?":
          this.i++;
          this.repeat(c === "*" ? "star" : c === "+" ? "plus" : "quest", 0, 0, c);
          repeated = true;
          break;
        case "{": {
          const r = this.parseRepeatCount();
          if (!r) {
            this.literal(1);
            this.i++;
            break;
          }
          this.i = r.end;
          if (
            r.min < 0 ||
            r.min > MAX_REPEAT ||
            r.max > MAX_REPEAT ||
            (r.max >= 0 && r.min > r.max)
          ) {
            fail(
              r.min >= 0 && r.max >= 0 && r.min > r.max && r.max <= MAX_REPEAT
                ? `invalid repetition range ${r.text}: maximum below minimum`
                : `repetition count above ${MAX_REPEAT} in ${r.text} is not supported by RE2`,
            );
          }
          this.repeat("repeat", r.min, r.max, r.text);
          repeated = true;
          break;
        }
        case "\\":
          this.parseBackslash();
          break;
        default: {
          const cp = re.codePointAt(this.i)!;
          this.i += cp > 0xffff ? 2 : 1;
          this.literal(1);
        }
      }
      this.lastRepeat = repeated;
    }
    this.closeAlternative();
    if (this.frames.length > 1) fail("unbalanced (: missing closing )");
    const top = this.frames[0];
    return this.alternate(top.alts);
  }

  private get frame(): Frame {
    return this.frames[this.frames.length - 1];
  }

  /** Go's push: two literals side by side become one literal node. */
  private push(n: Node): void {
    const items = this.frame.items;
    const k = items.length;
    if (k >= 2 && items[k - 1].kind === "lit" && items[k - 2].kind === "lit") {
      items.splice(k - 2, 2, node("lit", [], { runes: items[k - 2].runes! + items[k - 1].runes! }));
    }
    items.push(n);
    this.checkLimits(n);
  }

  private literal(runes: number): void {
    this.push(node("lit", [], { runes }));
  }

  private checkLimits(n: Node): void {
    if (n.height > MAX_HEIGHT) fail("nests too deeply for RE2 (parse tree height above 1000)");
    if (n.size > MAX_SIZE)
      fail("is too large for RE2 once compiled (repetition counts multiply its size)");
  }

  private repeat(
    kind: "star" | "plus" | "quest" | "repeat",
    min: number,
    max: number,
    text: string,
  ): void {
    let op = text;
    if (this.re[this.i] === "?") {
      this.i++;
      op += "?";
    }
    if (this.lastRepeat) {
      fail(
        text === "+"
          ? "possessive quantifier (e.g. a*+) is not supported by RE2"
          : `repeated quantifier (e.g. a** or a{2}*) is not supported by RE2: ${op}`,
      );
    }
    const items = this.frame.items;
    if (items.length === 0) fail(`missing argument to repetition operator ${op}`);
    const sub = items[items.length - 1];
    const r = kind === "repeat" ? node("repeat", [sub], { min, max }) : node(kind, [sub]);
    items[items.length - 1] = r;
    this.checkLimits(r);
    if (kind === "repeat" && (min >= 2 || max >= 2) && !nestedRepeatsValid(r)) {
      fail(
        `nested repetition counts multiply above ${MAX_REPEAT} at ${text}, which RE2 does not support`,
      );
    }
  }

  /** `{n}`, `{n,}`, `{n,m}` as Go reads them; undefined when the brace is a literal. */
  private parseRepeatCount(): { min: number; max: number; end: number; text: string } | undefined {
    const re = this.re;
    let j = this.i + 1;
    const int = (): number | undefined => {
      if (!isDigit(re[j])) return undefined;
      if (re[j] === "0" && isDigit(re[j + 1])) return undefined; // leading zeros: not a count
      let n = 0;
      while (isDigit(re[j])) {
        if (n >= 1e8) n = -1;
        else if (n >= 0) n = n * 10 + Number(re[j]);
        j++;
      }
      return n;
    };
    let min = int();
    if (min === undefined || j >= re.length) return undefined;
    let max = min;
    if (re[j] === ",") {
      j++;
      if (j >= re.length) return undefined;
      if (re[j] === "}") max = -1;
      else {
        const m = int();
        if (m === undefined) return undefined;
        max = m;
        if (m < 0) min = -1;
      }
    }
    if (re[j] !== "}") return undefined;
    return { min, max, end: j + 1, text: re.slice(this.i, j + 1) };
  }

  private openGroup(): void {
    const re = this.re;
    if (re[this.i + 1] !== "?") {
      this.frames.push({ items: [], alts: [], capture: true });
      this.i++;
      return;
    }
    const rest = re.slice(this.i + 2, this.i + 4);
    if (rest.startsWith("=") || rest.startsWith("!"))
      fail("look-ahead (?=…) / (?!…) is not supported by RE2");
    if (rest === "<=" || rest === "<!") fail("look-behind (?<=…) / (?<!…) is not supported by RE2");
    if (rest.startsWith(">")) fail("atomic group (?>…) is not supported by RE2");
    if (rest.startsWith("#")) fail("comment group (?#…) is not supported by RE2");
    if (rest.startsWith("(")) fail("conditional (?(…)…) is not supported by RE2");
    if (rest === "P=" || rest === "P>") fail("named backreference (?P=…) is not supported by RE2");
    if (rest.startsWith("'"))
      fail("named group (?'name'…) is not supported by RE2; use (?P<name>…)");
    // Named captures: (?P<name>…) and (?<name>…).
    const withP = re.length - this.i > 4 && rest === "P<";
    const bare = re.length - this.i > 3 && rest.startsWith("<");
    if (withP || bare) {
      const start = this.i + (withP ? 4 : 3);
      const end = re.indexOf(">", this.i);
      if (end < 0) fail("unterminated group name (?P<…");
      const name = re.slice(start, end);
      if (!/^[A-Za-z0-9_]+$/.test(name))
        fail(`invalid group name ${JSON.stringify(truncate(name, 32))}: use letters, digits and _`);
      this.frames.push({ items: [], alts: [], capture: true });
      this.i = end + 1;
      return;
    }
    // Flags, with or without a group: (?i) (?i-s:…) (?:…)
    let j = this.i + 2;
    let negated = false;
    let sawFlag = false;
    while (j < re.length) {
      const c = re[j];
      if (c === "i" || c === "m" || c === "s" || c === "U") {
        sawFlag = true;
        j++;
        continue;
      }
      if (c === "-" && !negated) {
        negated = true;
        sawFlag = false;
        j++;
        continue;
      }
      if ((c === ":" || c === ")") && (!negated || sawFlag)) {
        if (c === ":") this.frames.push({ items: [], alts: [], capture: false });
        this.i = j + 1;
        return;
      }
      break;
    }
    fail(
      `unsupported group syntax ${JSON.stringify(truncate(re.slice(this.i, j + 1), 16))}: RE2 takes (?:…), (?P<name>…), (?<name>…) and the flags i, m, s, U`,
    );
  }

  private concat(items: readonly Node[]): Node {
    if (items.length === 0) return leaf(); // empty match
    const k = items.length;
    if (k >= 2 && items[k - 1].kind === "lit" && items[k - 2].kind === "lit") {
      items = [
        ...items.slice(0, k - 2),
        node("lit", [], { runes: items[k - 2].runes! + items[k - 1].runes! }),
      ];
    }
    if (items.length === 1) return items[0];
    return node(
      "concat",
      items.flatMap(n => (n.kind === "concat" ? n.subs : [n])),
    );
  }

  private alternate(alts: readonly Node[]): Node {
    if (alts.length === 1) return alts[0];
    return node(
      "alt",
      alts.flatMap(n => (n.kind === "alt" ? n.subs : [n])),
    );
  }

  /** `|` or the end of a group: the concatenation so far becomes an alternative. */
  private closeAlternative(): void {
    const f = this.frame;
    const c = this.concat(f.items);
    this.checkLimits(c);
    f.items = [];
    const last = f.alts[f.alts.length - 1];
    // Go merges neighbouring single-character alternatives into one class (a|b → [ab]).
    if (last && isClassLike(last) && isClassLike(c)) f.alts[f.alts.length - 1] = node("class", []);
    else f.alts.push(c);
  }

  private closeGroup(): void {
    if (this.frames.length === 1) fail("unbalanced ): no group to close");
    this.closeAlternative();
    const f = this.frames.pop()!;
    const body = this.alternate(f.alts);
    this.checkLimits(body);
    this.push(f.capture ? node("capture", [body]) : body);
  }

  private parseBackslash(): void {
    const re = this.re;
    const n = re[this.i + 1];
    if (n === undefined) fail("ends with a lone backslash");
    switch (n) {
      case "A":
      case "b":
      case "B":
      case "z":
        this.push(leaf());
        this.i += 2;
        return;
      case "C":
        fail("\\C (any byte) is not supported by RE2");
        return;
      case "Q": {
        const end = re.indexOf("\\E", this.i + 2);
        if (end < 0)
          fail(
            "\\Q without a closing \\E: the rest of the expression, and what the proxy appends, would be literal",
          );
        const text = re.slice(this.i + 2, end);
        for (const _ of text) this.literal(1);
        this.i = end + 2;
        return;
      }
      case "p":
      case "P":
        this.i = this.unicodeClass(this.i);
        this.push(node("class", []));
        return;
      case "d":
      case "D":
      case "s":
      case "S":
      case "w":
      case "W":
        this.i += 2;
        this.push(node("class", []));
        return;
    }
    this.i = this.escape(this.i).end;
    this.literal(1);
  }

  /** `\p{Name}`, `\pL`, `\P…`, `\p{^…}` starting at `at`; returns the index after it. */
  private unicodeClass(at: number): number {
    const re = this.re;
    let name: string;
    let end: number;
    if (re[at + 2] === "{") {
      const close = re.indexOf("}", at);
      if (close < 0) fail("unterminated Unicode class \\p{…");
      name = re.slice(at + 3, close);
      end = close + 1;
    } else {
      const cp = re.codePointAt(at + 2);
      name = cp === undefined ? "" : String.fromCodePoint(cp);
      end = at + 2 + name.length;
    }
    if (name.startsWith("^")) name = name.slice(1);
    if (!UNICODE_NAMES.has(name)) {
      fail(
        `unknown Unicode class ${JSON.stringify(truncate(name, 32))}: use a general category (L, Lu, N, …), a script (Greek, Han, …) or Any, spelled exactly`,
      );
    }
    return end;
  }

  /** One escaped character (Go's parseEscape) at `at`: its code point and the index after it. */
  private escape(at: number): { value: number; end: number } {
    const re = this.re;
    const cp = re.codePointAt(at + 1);
    if (cp === undefined) fail("ends with a lone backslash");
    const c = String.fromCodePoint(cp!);
    let j = at + 1 + c.length;
    if (cp! < 0x80 && !isAlnum(c)) return { value: cp!, end: j };
    const octal = (d: string | undefined): boolean => d !== undefined && d >= "0" && d <= "7";
    if (c === "0" || (c >= "1" && c <= "7" && octal(re[j]))) {
      let v = Number(c);
      for (let k = 1; k < 3 && octal(re[j]); k++) v = v * 8 + Number(re[j++]);
      return { value: v, end: j };
    }
    if (c === "x") {
      if (re[j] === "{") {
        j++;
        let v = 0;
        let digits = 0;
        while (j < re.length && re[j] !== "}") {
          const h = hexValue(re[j]);
          if (h < 0)
            fail(`invalid hexadecimal escape ${JSON.stringify(truncate(re.slice(at, j + 1), 16))}`);
          v = v * 16 + h;
          if (v > MAX_RUNE) fail("hexadecimal escape above \\x{10FFFF}");
          digits++;
          j++;
        }
        if (j >= re.length || digits === 0) fail("unterminated or empty hexadecimal escape \\x{…}");
        return { value: v, end: j + 1 };
      }
      const x = hexValue(re[j]);
      const y = hexValue(re[j + 1]);
      if (x < 0 || y < 0) fail("invalid hexadecimal escape: \\x takes two hex digits or \\x{…}");
      return { value: x * 16 + y, end: j + 2 };
    }
    const simple: Record<string, number> = { a: 7, f: 12, n: 10, r: 13, t: 9, v: 11 };
    if (c in simple) return { value: simple[c], end: j };
    if (c >= "1" && c <= "9") fail(`backreference \\${c} is not supported by RE2`);
    if (c === "k" && re[j] === "<") fail("named backreference \\k<…> is not supported by RE2");
    if (c === "Z") fail("\\Z is not supported by RE2: use \\z (end of text) or $");
    return fail(`escape \\${c} is not supported by RE2`);
  }

  /** A bracketed class at `this.i` (Go's parseClass); moves past its `]`. */
  private parseClass(): void {
    const re = this.re;
    let j = this.i + 1;
    if (re[j] === "^") j++;
    let first = true;
    const unterminated = (): never => fail("unterminated character class: missing ]");
    while (j >= re.length || re[j] !== "]" || first) {
      first = false;
      if (j >= re.length) unterminated();
      // POSIX [:alpha:]
      if (re[j] === "[" && re[j + 1] === ":" && j + 2 < re.length) {
        const close = re.indexOf(":]", j + 2);
        if (close >= 0) {
          const name = re.slice(j, close + 2);
          if (!POSIX_CLASSES.has(name))
            fail(`unknown POSIX class ${JSON.stringify(truncate(name, 32))}`);
          j = close + 2;
          continue;
        }
      }
      if (re[j] === "\\" && (re[j + 1] === "p" || re[j + 1] === "P")) {
        j = this.unicodeClass(j);
        continue;
      }
      if (re[j] === "\\" && re[j + 1] !== undefined && "dDsSwW".includes(re[j + 1])) {
        j += 2;
        continue;
      }
      const start = j;
      const lo = this.classChar(j);
      j = lo.end;
      if (re[j] === "-" && j + 1 < re.length && re[j + 1] !== "]") {
        const hi = this.classChar(j + 1);
        j = hi.end;
        if (hi.value < lo.value)
          fail(
            `invalid character class range ${JSON.stringify(re.slice(start, j))}: end before start`,
          );
      }
    }
    this.i = j + 1;
  }

  private classChar(at: number): { value: number; end: number } {
    const re = this.re;
    if (at >= re.length) fail("unterminated character class: missing ]");
    if (re[at] === "\\") {
      if (at + 1 >= re.length) fail("unterminated character class: missing ]");
      return this.escape(at);
    }
    const cp = re.codePointAt(at)!;
    return { value: cp, end: at + (cp > 0xffff ? 2 : 1) };
  }
}
