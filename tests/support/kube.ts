/** Small helpers for integration tests: kubectl against the local cluster, test namespaces. */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { kubeconfigPath, kubectlBin } from "./paths";

export interface KubectlResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

const sleepSync = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * Runs kubectl against the local cluster; never throws on a non-zero exit. While the module's
 * webhook cannot be reached ("failed calling webhook": `pepr dev` starting or reloading), the
 * call is repeated for up to 30 s; a denial ("denied the request") is returned at once.
 */
export function kubectl(args: readonly string[], input?: string): KubectlResult {
  for (let attempt = 0; ; attempt++) {
    const r = spawnSync(kubectlBin, ["--kubeconfig", kubeconfigPath, ...args], {
      input,
      encoding: "utf8",
      timeout: 120_000,
      // a Helm release Secret's data is over spawnSync's default 1 MiB
      maxBuffer: 64 * 1024 * 1024,
    });
    const result = {
      code: r.status ?? -1,
      stdout: r.stdout ?? "",
      // a spawn error (timeout, output over maxBuffer) says why there is no exit code
      stderr: (r.stderr ?? "") + (r.error ? String(r.error) : ""),
    };
    if (result.code === 0 || !result.stderr.includes("failed calling webhook") || attempt >= 30)
      return result;
    sleepSync(1000);
  }
}

/** Runs kubectl and throws with its stderr when it fails. */
export function kubectlOk(args: readonly string[], input?: string): string {
  const r = kubectl(args, input);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")} failed (${r.code}): ${r.stderr}`);
  return r.stdout;
}

/** Creates a namespace with a unique name; delete it with deleteNamespace in afterAll. */
export function createNamespace(prefix: string, labels: Record<string, string> = {}): string {
  const name = `${prefix}-${randomBytes(3).toString("hex")}`;
  kubectlOk(["create", "namespace", name]);
  const pairs = Object.entries(labels).map(([k, v]) => `${k}=${v}`);
  if (pairs.length) kubectlOk(["label", "namespace", name, ...pairs]);
  return name;
}

export function deleteNamespace(name: string): void {
  kubectl(["delete", "namespace", name, "--wait=false", "--ignore-not-found"]);
}

/** Polls fn until it returns a value that is not undefined, or throws after timeoutMs. */
export async function eventually<T>(
  what: string,
  fn: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 30_000,
  intervalMs = 250,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ""}`,
      );
    }
    await new Promise(r => setTimeout(r, intervalMs));
  }
}

/** `kubectl apply` of these objects as one List. */
export function applyItems(items: readonly object[]): string {
  return kubectlOk(["apply", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items }));
}
