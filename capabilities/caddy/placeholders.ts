/**
 * Caddy expands `{…}` placeholders in most string fields it reads per request (header names
 * and values, static response bodies, rewrite URIs, query matchers, span names, upstream
 * dials…), including `{env.*}` and `{file.*}`, which read the proxy's environment and files.
 * A tenant's text in such a field is escaped: Caddy turns `\{` and `\}` back into braces, and
 * since every brace gets its own backslash, a tenant's own backslashes stay literal too.
 */
export const escapePlaceholders = (v: string): string => v.replace(/[{}]/g, "\\$&");

/** The text escapePlaceholders was given (each brace has exactly one backslash of ours). */
export const unescapePlaceholders = (v: string): string => v.replace(/\\([{}])/g, "$1");
