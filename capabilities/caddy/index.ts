export {
  toCaddyConfig,
  caddySourceMap,
  listenerSource,
  renderCaddyJSON,
  escapePlaceholders,
  celString,
  celPlaceholder,
  ERROR_SERVER_NAME,
  WILDCARD_SNI_DEPTH,
} from "./config";
export type { CaddyOptions, CaddySourceMap, SourceObject } from "./config";
export * from "./types";
