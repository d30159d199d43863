/**
 * A private key in PEM form that refuses to be printed: JSON.stringify, string
 * interpolation and util.inspect (console.log, winston's splat) all show a placeholder.
 * Only `reveal()` returns the key, and only code that writes it to a Secret, a file or the
 * mTLS channel should call it.
 */
import { inspect } from "node:util";

const REDACTED = "[private key redacted]";

export class SecretPem {
  readonly #pem: string;
  constructor(pem: string) {
    this.#pem = pem;
  }
  reveal(): string {
    return this.#pem;
  }
  toString(): string {
    return REDACTED;
  }
  toJSON(): string {
    return REDACTED;
  }
  [inspect.custom](): string {
    return REDACTED;
  }
}
