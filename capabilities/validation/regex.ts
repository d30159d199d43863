/**
 * Regular-expression rules shared by admission and translation. Kengine/Caddy evaluate
 * path and header regular expressions with Go's RE2 engine (package regexp), which has no
 * look-around, no backreferences, no possessive quantifiers or atomic groups, and limits
 * repetition counts to 1000.
 */

/** A problem found in one field of an object, in kubectl's field-path style. */
export interface FieldProblem {
  readonly path: string;
  readonly value: string;
  readonly message: string;
}

/** Cuts a value for display in an error message. */
export const truncate = (value: string, max = 64): string =>
  value.length <= max ? value : `${value.slice(0, max)}… (${value.length} characters)`;

/** Checks one regular expression a route asks the proxy to run. */
export function checkRegex(path: string, value: string): FieldProblem[] {
  if (value.length === 0) {
    return [{ path, value, message: "must not be empty: an empty regular expression matches every request" }];
  }
  const problem = re2Problem(value);
  return problem ? [{ path, value: truncate(value), message: problem }] : [];
}

/** Letters Go's regexp accepts after a backslash. */
const RE2_LETTER_ESCAPES = new Set([..."aftnrvAbBzdDsSwWpPQEx"]);

const FLAG_CHARS = new Set(["i", "m", "s", "U", "-"]);

/**
 * Why `re` is not a valid RE2 (Go regexp) expression, or undefined when it is. A scanner,
 * not a full parser: it finds the constructs other engines accept and RE2 refuses, and
 * structural errors (unbalanced groups or classes, dangling escapes, bad repetition).
 */
export function re2Problem(re: string): string | undefined {
  let depth = 0;
  let i = 0;
  // Whether the previous token can be repeated (an atom or a group end).
  let canRepeat = false;
  // Whether the previous token was a quantifier (to detect possessive `*+` etc.).
  let afterQuantifier = false;
  while (i < re.length) {
    const c = re[i];
    if (c === "\\") {
      const n = re[i + 1];
      if (n === undefined) return "ends with a lone backslash";
      if (/[1-9]/.test(n)) return `backreference \\${n} is not supported by RE2`;
      if (n === "k" && re[i + 2] === "<") return "named backreference \\k<…> is not supported by RE2";
      if (/[A-Za-z]/.test(n) && !RE2_LETTER_ESCAPES.has(n)) return `escape \\${n} is not supported by RE2`;
      if (n === "p" || n === "P") {
        if (re[i + 2] === "{") {
          const end = re.indexOf("}", i + 3);
          if (end < 0) return "unterminated \\p{…} class";
          i = end + 1;
        } else i += 3;
      } else if (n === "x" && re[i + 2] === "{") {
        const end = re.indexOf("}", i + 3);
        if (end < 0) return "unterminated \\x{…} escape";
        i = end + 1;
      } else if (n === "Q") {
        const end = re.indexOf("\\E", i + 2);
        i = end < 0 ? re.length : end + 2;
      } else i += 2;
      canRepeat = true;
      afterQuantifier = false;
      continue;
    }
    if (c === "[") {
      const end = classEnd(re, i);
      if (end < 0) return "unterminated character class [";
      i = end + 1;
      canRepeat = true;
      afterQuantifier = false;
      continue;
    }
    if (c === "(") {
      if (re[i + 1] === "?") {
        const rest = re.slice(i + 2);
        if (rest.startsWith("=") || rest.startsWith("!")) return "look-ahead (?=…) / (?!…) is not supported by RE2";
        if (rest.startsWith("<=") || rest.startsWith("<!")) return "look-behind (?<=…) / (?<!…) is not supported by RE2";
        if (rest.startsWith(">")) return "atomic group (?>…) is not supported by RE2";
        if (rest.startsWith("(")) return "conditional (?(…)…) is not supported by RE2";
        if (rest.startsWith("#")) return "comment group (?#…) is not supported by RE2";
        if (rest.startsWith("P<") || rest.startsWith("<")) {
          const start = rest.startsWith("P<") ? 2 : 1;
          const close = rest.indexOf(">", start);
          if (close < 0) return "unterminated group name";
          const name = rest.slice(start, close);
          if (!/^[A-Za-z0-9_]+$/.test(name)) return `invalid group name ${JSON.stringify(name)}`;
          if (rest.startsWith("P=") || rest.startsWith("P>")) return "named backreference is not supported by RE2";
          i += 2 + close + 1;
          depth++;
          canRepeat = false;
          afterQuantifier = false;
          continue;
        }
        if (rest.startsWith("P=") || rest.startsWith("P>")) return "named backreference is not supported by RE2";
        // Flags: (?flags) or (?flags:…)
        let j = 0;
        while (j < rest.length && FLAG_CHARS.has(rest[j])) j++;
        if (rest[j] === ")") {
          if (j === 0) return "empty flag group (?)";
          i += 2 + j + 1;
          canRepeat = false;
          afterQuantifier = false;
          continue;
        }
        if (rest[j] === ":") {
          i += 2 + j + 1;
          depth++;
          canRepeat = false;
          afterQuantifier = false;
          continue;
        }
        return `unsupported group syntax (?${rest.slice(0, 2)}`;
      }
      depth++;
      i++;
      canRepeat = false;
      afterQuantifier = false;
      continue;
    }
    if (c === ")") {
      if (depth === 0) return "unbalanced ): no group to close";
      depth--;
      i++;
      canRepeat = true;
      afterQuantifier = false;
      continue;
    }
    if (c === "*" || c === "+" || c === "?") {
      if (afterQuantifier) {
        if (c === "+") return "possessive quantifier (e.g. a*+) is not supported by RE2";
        if (c === "?" && re[i - 1] !== "?") {
          // lazy modifier after a quantifier: allowed once
          i++;
          afterQuantifier = false;
          canRepeat = false;
          continue;
        }
        return "repeated quantifier (e.g. a**) is not supported by RE2";
      }
      if (!canRepeat) return `missing argument to repetition operator ${c}`;
      i++;
      afterQuantifier = true;
      canRepeat = false;
      continue;
    }
    if (c === "{") {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(re.slice(i));
      if (m) {
        if (afterQuantifier) return "repeated quantifier (e.g. a*{2}) is not supported by RE2";
        if (!canRepeat) return "missing argument to repetition operator {";
        const min = Number(m[1]);
        const max = m[3] === undefined || m[3] === "" ? min : Number(m[3]);
        if (min > 1000 || max > 1000) return "repetition count above 1000 is not supported by RE2";
        if (m[3] !== undefined && m[3] !== "" && max < min) return "invalid repetition range: max below min";
        i += m[0].length;
        afterQuantifier = true;
        canRepeat = false;
        continue;
      }
      // A literal brace.
      i++;
      canRepeat = true;
      afterQuantifier = false;
      continue;
    }
    if (c === "|" || c === "^" || c === "$") {
      i++;
      canRepeat = c !== "|";
      // Go allows ^* and $* (empty-width repeats); keep it permissive there.
      afterQuantifier = false;
      continue;
    }
    i++;
    canRepeat = true;
    afterQuantifier = false;
  }
  if (depth > 0) return "unbalanced (: missing )";
  return undefined;
}

/** Index of the `]` that closes the class opened at `start`, or -1. */
function classEnd(re: string, start: number): number {
  let i = start + 1;
  if (re[i] === "^") i++;
  if (re[i] === "]") i++; // a leading ] is literal
  while (i < re.length) {
    const c = re[i];
    if (c === "\\") {
      i += 2;
      continue;
    }
    if (c === "[" && re[i + 1] === ":") {
      const end = re.indexOf(":]", i + 2);
      if (end >= 0) {
        i = end + 2;
        continue;
      }
    }
    if (c === "]") return i;
    i++;
  }
  return -1;
}

/** Quotes a literal for use inside an RE2 expression. */
export const quoteRE2 = (s: string): string => s.replace(/[\\.+*?()|[\]{}^$]/g, "\\$&");
