/** How a rule names what is wrong with one field, and how values are shown in messages. */

/** A problem found in one field of an object, in kubectl's field-path style. */
export interface FieldProblem {
  readonly path: string;
  readonly value: string;
  readonly message: string;
}

/** Cuts a value for display in an error message. */
export const truncate = (value: string, max = 64): string => {
  // Values come from objects as sent: a field the rules expect as text may hold anything.
  if (typeof value !== "string") value = display(value);
  if (value.length <= max) return value;
  // Already cut (values are cut where found, and again when shown): keep the first count.
  const m = /… \(\d+ characters\)$/.exec(value);
  if (m && m.index === max) return value;
  return `${value.slice(0, max)}… (${value.length} characters)`;
};

/** A short rendering of any value for a message (never throws, whatever the value). */
export function display(v: unknown): string {
  if (typeof v === "string") return v;
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return Array.isArray(v) ? "[…]" : typeof v === "object" && v !== null ? "{…}" : String(v);
  }
}
