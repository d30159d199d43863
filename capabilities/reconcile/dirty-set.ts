/**
 * Dirty-set stage: between ingest and translation. It remembers what changed since the last
 * build took it (which objects, and whether any change can alter the translation: status-only
 * updates, our own status writes coming back and push results cannot), and runs builds one at
 * a time: a build asked for while one runs is run once more after it, however many times it
 * was asked (the requests coalesce; the next build reads the snapshot as it is then).
 */
import { Snapshot, SnapshotEvent } from "../snapshot";
import { changesTranslation } from "./ingest";

/** What a build takes from the dirty set. */
export interface Dirty {
  /** Whether the translation must be made again. */
  readonly translate: boolean;
  /** "Kind/namespace/name" of the objects changed since the last take (empty when `all`). */
  readonly objects: readonly string[];
  /** More objects changed than the set keeps (or everything is to be taken again). */
  readonly all: boolean;
}

export class DirtySet {
  #translate = true;
  #all = true;
  readonly #objects = new Set<string>();

  /** At most this many objects are named; beyond, the set says `all`. */
  constructor(private readonly limit = 1024) {}

  /** Records `event` before it is applied to `snapshot`. */
  observe(snapshot: Snapshot, event: SnapshotEvent): void {
    if (event.type === "synced") {
      this.markAll();
      return;
    }
    if (!this.#translate && changesTranslation(snapshot, event)) this.#translate = true;
    if (this.#all) return;
    if (this.#objects.size >= this.limit) {
      this.#all = true;
      this.#objects.clear();
      return;
    }
    const o = event.object.metadata;
    this.#objects.add(`${event.kind}/${o.namespace ?? ""}/${o.name}`);
  }

  /** Everything may have changed (a relist, a kind served again, a refused object). */
  markAll(): void {
    this.#translate = true;
    this.#all = true;
    this.#objects.clear();
  }

  /** Whether a build would translate again now. */
  get translate(): boolean {
    return this.#translate;
  }

  /** What changed since the last take; the set starts empty again. */
  take(): Dirty {
    const d: Dirty = { translate: this.#translate, objects: [...this.#objects], all: this.#all };
    this.#translate = false;
    this.#all = false;
    this.#objects.clear();
    return d;
  }
}

/** Runs builds one at a time; requests made while one runs coalesce into one more build. */
export class BuildLoop {
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;

  constructor(
    private readonly build: () => Promise<void>,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Runs a build now, or once more after the one in progress. */
  request(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.build()
      .catch(e => this.onError(e))
      .finally(() => {
        this.#running = undefined;
        if (this.#again) {
          this.#again = false;
          this.request();
        }
      });
  }

  /** The build running now, if any. */
  get running(): Promise<void> | undefined {
    return this.#running;
  }

  /** No more builds start; resolves when the running one ends. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#running;
  }
}
