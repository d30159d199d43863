export { translate, redirectIR } from "./translate";
export type { TranslateOptions, TranslateResult } from "./translate";
export * from "./conditions";
export * from "./status";
export { SUPPORTED_FEATURES } from "./features";
export { covers, intersectHostnames, compareHostSpecificity, isWildcard } from "./hostnames";
export { comparePrecedence } from "./precedence";
export type { RankedMatch } from "./precedence";
