import { EndpointSlice, KubeObject } from "../../capabilities/snapshot";

export interface LoopbackOptions {
  /** The address every kept endpoint gets (default 127.0.0.1). */
  host?: string;
  /** Keep every endpoint of a slice instead of only its first one. */
  allEndpoints?: boolean;
}

/**
 * `objects` with every EndpointSlice pointed at its own server on loopback: `serve(id)` starts
 * one for the slice `id` ("namespace/name") and returns its port, which replaces every port of
 * the slice; the slice keeps its first endpoint (or all of them), with the address `host`.
 * Other objects are kept as they are, in order.
 */
export async function withLoopbackEndpoints(
  objects: KubeObject[],
  serve: (id: string) => Promise<number>,
  opts: LoopbackOptions = {},
): Promise<KubeObject[]> {
  const host = opts.host ?? "127.0.0.1";
  const out: KubeObject[] = [];
  for (const o of objects) {
    if (o.kind !== "EndpointSlice") {
      out.push(o);
      continue;
    }
    const slice = o as EndpointSlice;
    const port = await serve(`${slice.metadata.namespace}/${slice.metadata.name}`);
    const endpoints = slice.endpoints ?? [];
    out.push({
      ...slice,
      ports: (slice.ports ?? []).map(p => ({ ...p, port })),
      endpoints: (opts.allEndpoints ? endpoints : endpoints.slice(0, 1)).map(e => ({
        ...e,
        addresses: [host],
      })),
    } as EndpointSlice);
  }
  return out;
}
