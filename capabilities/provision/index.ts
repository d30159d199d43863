export * from "./names";
export * from "./settings";
export * from "./objects";
export * from "./parameters";
export * from "./addresses";
export * from "./routability";
