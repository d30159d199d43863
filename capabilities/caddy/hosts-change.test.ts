import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { hostsChangeFrom, noteHostsChange } from "./hosts-change";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const record = (n: number): Record<string, unknown> =>
  Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`h${n}-${i}.test`, [i]]));

describe("hosts change notes", () => {
  it("tell how a record was made from the one before it, and from no other", () => {
    const a = record(0);
    const b = { ...a, "new.test": [] };
    noteHostsChange(b, { from: a, keys: ["new.test"] });
    expect(hostsChangeFrom(b, a)).toEqual({ from: a, keys: ["new.test"] });
    expect(hostsChangeFrom(b, { ...a })).toBeUndefined();
    expect(hostsChangeFrom(a, b)).toBeUndefined();
  });

  it("do not keep earlier records alive: a chain of renders can be collected", async () => {
    const refs: WeakRef<object>[] = [];
    let last: object = record(0);
    refs.push(new WeakRef(last));
    for (let n = 1; n < 50; n++) {
      const next = record(n);
      noteHostsChange(next, { from: last, keys: [] });
      refs.push(new WeakRef(next));
      last = next;
    }
    // WeakRef targets live until the end of the job that made them
    await new Promise(r => setImmediate(r));
    gc();
    const alive = refs.slice(0, -1).filter(r => r.deref() !== undefined).length;
    expect(alive).toBe(0);
    expect(refs.at(-1)!.deref()).toBe(last);
  });
});
