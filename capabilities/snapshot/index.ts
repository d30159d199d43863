export * from "./types";
export {
  CONTROLLER_NAME,
  apply,
  applyAll,
  changedKeys,
  collectDataReferences,
  dataReferences,
  earlierVersions,
  emptySnapshot,
  isSynced,
  keyOf,
  referenceIndex,
  relevantChange,
  snapshotOf,
} from "./snapshot";
export { selectorMatches } from "./labels";
export type {
  ApplyResult,
  DataPermitted,
  DataReferences,
  ObjectMapOf,
  ReferenceIndex,
  Snapshot,
  SnapshotEvent,
} from "./snapshot";
export { PARTIAL_METADATA_KIND, asMetadataOnly, metadataOnly } from "./strip";
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
