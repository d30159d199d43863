export {
  toCaddyConfig,
  renderCaddyJSON,
  escapePlaceholders,
  ERROR_SERVER_NAME,
  WILDCARD_SNI_DEPTH,
} from "./config";
export type { CaddyOptions } from "./config";
export * from "./types";
