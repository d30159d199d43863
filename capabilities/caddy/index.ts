export { toCaddyConfig, renderCaddyJSON, escapePlaceholders, ERROR_SERVER_NAME } from "./config";
export type { CaddyOptions } from "./config";
export * from "./types";
