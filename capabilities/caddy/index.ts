export {
  toCaddyConfig,
  renderCaddyJSON,
  escapePlaceholders,
  celString,
  celPlaceholder,
  ERROR_SERVER_NAME,
  WILDCARD_SNI_DEPTH,
} from "./config";
export type { CaddyOptions } from "./config";
export * from "./types";
