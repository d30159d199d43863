export { LeaderElector, microTime, realClock } from "./elector";
export type { ElectorClock, ElectorEvents, LeaseAttempt } from "./elector";
export { kubeLeaseStore } from "./kube-store";
export { ConflictError, DEFAULT_ELECTION, electionConfigProblems } from "./types";
export type { ElectionConfig, LeaseRecord, LeaseStore, LeaseWrite } from "./types";
export { DEFAULT_LEASE_NAME, ELECTION_ENV, electionFromEnv, parseDuration } from "./env";
export type { ElectionEnvResult, ElectionSettings } from "./env";
