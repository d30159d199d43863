export * from "./compute";
export { PARENT_STATUS_INTERVAL_MS, StatusWriter, failedWritesSummary } from "./writer";
export type { StatusApi, StatusWriterOptions, WriteReport } from "./writer";
export { kubeStatusApi, objectPath } from "./status-api";
export {
  BUNDLE_VERSION_ANNOTATION,
  SUPPORTED_BUNDLE_VERSION,
  supportedVersionCondition,
} from "./supported-version";
