import type { Socket } from "node:net";

/** Sends `send` once `open` has connected, and returns what came back up to its echo; or the error. */
export function echoExchange(
  open: (onConnect: () => void) => Socket,
  send: string,
): Promise<string> {
  return new Promise(resolve => {
    let data = "";
    const s = open(() => s.write(send));
    s.setTimeout(5000, () => s.destroy(new Error("timeout")));
    s.on("data", d => {
      data += d.toString();
      if (data.endsWith(send)) s.end();
    });
    s.on("close", () => resolve(data));
    s.on("error", (e: Error & { code?: string }) => resolve(`error:${e.code ?? e.message}`));
  });
}
