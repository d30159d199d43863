/**
 * A small Kubernetes API client for the benchmark (undici, client certificate): many creates
 * in parallel, lists, patches, raw GETs. kubectl would cost a process per call.
 */
import { readFileSync } from "node:fs";
import { Agent, Dispatcher, request } from "undici";

export interface KubeAuth {
  readonly server: string;
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

/** Reads a kubeconfig of the local platform's shape (file paths for CA, cert and key). */
export function authFromKubeconfig(path: string): KubeAuth {
  const text = readFileSync(path, "utf8");
  const field = (name: string): string => {
    const m = new RegExp(`${name}:\\s*(\\S+)`).exec(text);
    if (!m) throw new Error(`${path}: no ${name}`);
    return m[1];
  };
  return {
    server: field("server"),
    ca: readFileSync(field("certificate-authority"), "utf8"),
    cert: readFileSync(field("client-certificate"), "utf8"),
    key: readFileSync(field("client-key"), "utf8"),
  };
}

export class Kube {
  readonly #agent: Dispatcher;
  constructor(readonly auth: KubeAuth) {
    this.#agent = new Agent({
      connect: { ca: auth.ca, cert: auth.cert, key: auth.key },
      connections: 32,
    });
  }

  async call(
    method: Dispatcher.HttpMethod,
    path: string,
    body?: unknown,
    contentType = "application/json",
  ): Promise<{ status: number; text: string }> {
    // A busy API server sometimes drops a kept-alive connection: retry a few times.
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await request(`${this.auth.server}${path}`, {
          method,
          dispatcher: this.#agent,
          headers: body === undefined ? {} : { "content-type": contentType },
          body: body === undefined ? undefined : JSON.stringify(body),
          headersTimeout: 120_000,
          bodyTimeout: 120_000,
        });
        return { status: res.statusCode, text: await res.body.text() };
      } catch (e) {
        if (attempt >= 5) throw e;
        await new Promise(r => setTimeout(r, 1000));
      }
    }
  }

  async ok<T = unknown>(
    method: Dispatcher.HttpMethod,
    path: string,
    body?: unknown,
    ct?: string,
  ): Promise<T> {
    const r = await this.call(method, path, body, ct);
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.text.slice(0, 400)}`);
    return JSON.parse(r.text) as T;
  }

  /** Creates (or, when it exists, replaces by server-side apply) one object. */
  async apply(o: KubeObjectLike): Promise<void> {
    const path = `${collectionPath(o)}/${o.metadata.name}?fieldManager=kengine-bench&force=true`;
    const r = await this.call("PATCH", path, o, "application/apply-patch+yaml");
    if (r.status >= 300)
      throw new Error(`apply ${o.kind} ${o.metadata.name}: ${r.status} ${r.text.slice(0, 400)}`);
  }

  /**
   * Creates one object; while the webhook cannot be reached (module restarting), or answers that
   * it could not decide in time and nothing was stored (a loaded machine), it retries for 30 s.
   */
  async create(o: KubeObjectLike): Promise<void> {
    let r = await this.call("POST", collectionPath(o), o);
    const retry = () =>
      (r.status === 500 && r.text.includes("failed calling webhook")) ||
      (r.status === 422 && r.text.includes("nothing was stored, retry"));
    for (let i = 0; i < 30 && retry(); i++) {
      await new Promise(res => setTimeout(res, 1000));
      r = await this.call("POST", collectionPath(o), o);
    }
    if (r.status >= 300 && r.status !== 409)
      throw new Error(`create ${o.kind} ${o.metadata.name}: ${r.status} ${r.text.slice(0, 400)}`);
  }

  async delete(o: KubeObjectLike): Promise<void> {
    await this.call("DELETE", `${collectionPath(o)}/${o.metadata.name}`);
  }

  /** Runs fn over items with `parallel` requests in flight. */
  static async each<T>(
    items: readonly T[],
    parallel: number,
    fn: (t: T) => Promise<void>,
  ): Promise<void> {
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(parallel, items.length) }, async () => {
        while (next < items.length) await fn(items[next++]);
      }),
    );
  }

  close(): Promise<void> {
    return this.#agent.close();
  }
}

export interface KubeObjectLike {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: { readonly name: string; readonly namespace?: string };
}

const PLURALS: Record<string, string> = {
  Namespace: "namespaces",
  Service: "services",
  Deployment: "deployments",
  GatewayClass: "gatewayclasses",
  Gateway: "gateways",
  HTTPRoute: "httproutes",
  KengineParameters: "kengineparameters",
  ClusterRoleBinding: "clusterrolebindings",
  FlowSchema: "flowschemas",
};

export function collectionPath(o: KubeObjectLike): string {
  const plural = PLURALS[o.kind ?? ""];
  if (!plural) throw new Error(`kind ${o.kind} not known to the bench client`);
  const api = o.apiVersion ?? "v1";
  const base = api.includes("/") ? `/apis/${api}` : `/api/${api}`;
  return o.metadata.namespace
    ? `${base}/namespaces/${o.metadata.namespace}/${plural}`
    : `${base}/${plural}`;
}
