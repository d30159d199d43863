export * from "./types";
export {
  CONTROLLER_NAME,
  apply,
  applyAll,
  changedKeys,
  earlierVersions,
  emptySnapshot,
  isSynced,
  keyOf,
  referenceIndex,
  relevantChange,
  selectorMatches,
  snapshotOf,
} from "./snapshot";
export type { ApplyResult, ObjectMapOf, ReferenceIndex, Snapshot, SnapshotEvent } from "./snapshot";
export {
  Batcher,
  DEFAULT_BATCH,
  batchDeadline,
  batchDue,
  batchLeads,
  batchNotify,
  systemClock,
} from "./batch";
export type { BatchOptions, BatchState, ChangeKind, Clock } from "./batch";
