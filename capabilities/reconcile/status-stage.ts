/**
 * The build's status stage for Gateway API objects: a job for the status queue
 * (status-queue.ts) that computes every object's status update from the build's results
 * (status/compute.ts) against the freshest copy of each object, and hands them to the writer.
 */
import { statusMetrics } from "../metrics";
import { CONTROLLER_NAME } from "../ownership";
import type { Snapshot } from "../snapshot";
import {
  GatewayAddress,
  StatusKind,
  StatusMemo,
  StatusWriter,
  WriteReport,
  computeStatusUpdates,
} from "../status";
import type { StatusResults } from "../translate";

export interface ObjectStatusInput {
  readonly results: StatusResults;
  readonly addresses: ReadonlyMap<string, readonly GatewayAddress[]>;
  /** The snapshot the results were made from. */
  readonly snapshot: Snapshot;
  readonly now: Date;
  readonly writer: Pick<StatusWriter, "freshest" | "version" | "writtenSince" | "write">;
  /** Objects whose status was found in place, skipped while they and their result stay the same. */
  readonly memo: StatusMemo;
  readonly report: (report: WriteReport) => void;
}

/** The job that writes the build's status (read against the writer when it runs, not now). */
export const objectStatusJob = (input: ObjectStatusInput) => async (): Promise<void> => {
  const { snapshot, writer } = input;
  const stored = (kind: StatusKind, ns: string | undefined, name: string) =>
    writer.freshest(kind, ns, name, snapshot.objects[kind].get(ns ? `${ns}/${name}` : name));
  const updates = computeStatusUpdates({
    results: input.results,
    current: stored,
    controllerName: CONTROLLER_NAME,
    addresses: input.addresses,
    now: input.now.toISOString().replace(/\.\d{3}Z$/, "Z"),
    onUnchanged: kind => statusMetrics.unchanged(kind, 1),
    memo: input.memo,
    // What `stored` reads: unchanged routes found in place are skipped unread.
    stored: {
      routes: {
        HTTPRoute: snapshot.objects.HTTPRoute,
        GRPCRoute: snapshot.objects.GRPCRoute,
        TLSRoute: snapshot.objects.TLSRoute,
        TCPRoute: snapshot.objects.TCPRoute,
        UDPRoute: snapshot.objects.UDPRoute,
      },
      version: writer.version,
      writtenSince: v => writer.writtenSince(v),
    },
  });
  // Always handed over, even empty: pending rate-limited updates no longer wanted are dropped.
  input.report(await writer.write(updates));
};
