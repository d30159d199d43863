/**
 * Which Services a compilation read (an endpoint or Service change recompiles only
 * the routes naming that Service). `backends.ts` notes every Service it looks up while a
 * compilation records (incremental/compile.ts `compileAny`); the compiled route is then kept while those
 * Services and their EndpointSlices are the same objects. Synchronous: a recording never
 * spans an await.
 */
let recording: Set<string> | undefined;

/** Runs `f`, returning its value and the `namespace/name` of every Service it looked up. */
export function recordServiceReads<T>(f: () => T): {
  readonly value: T;
  readonly services: readonly string[];
} {
  const outer = recording;
  const mine = new Set<string>();
  recording = mine;
  try {
    const value = f();
    return { value, services: [...mine].sort() };
  } finally {
    recording = outer;
    if (outer) for (const k of mine) outer.add(k);
  }
}

/** Called by every lookup of a Service (backends.ts). */
export function serviceRead(key: string): void {
  recording?.add(key);
}
