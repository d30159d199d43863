export { Reconciler, CONTROLLER_NAME } from "./reconciler";
export type { Logger, ReconcilerOptions } from "./reconciler";
export { planGateway, proxyEndpoints } from "./plan";
export { programmedCondition, serviceAddresses, withFleet } from "../status/programmed";
