export * from "./names";
export * from "./settings";
export * from "./parameters";
export * from "./addresses";
export * from "./routability";
