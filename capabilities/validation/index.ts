/** Single-object rules shared by admission and translation (docs/architecture.md §4). */
export {
  FieldProblem,
  checkRegex,
  re2Problem,
  quoteRE2,
  truncate,
  MAX_REGEX_LENGTH,
} from "./regex";
export { Collector, MAX_CHARACTERS, MAX_PROBLEMS, MAX_VALUES } from "./budget";
export {
  checkHeaderName,
  checkHeaderValue,
  checkMatchedHeaderName,
  checkRemovedHeaderName,
  checkURLPath,
} from "./fields";
export {
  httpRouteProblems,
  httpRouteRuleProblems,
  SUPPORTED_FILTERS,
  SUPPORTED_BACKEND_FILTERS,
} from "./httproute";
export { grpcRouteProblems, grpcRouteRuleProblems } from "./grpcroute";
export {
  caCertificateRefKindProblem,
  clientCertificateRefKindProblem,
  gatewayProblems,
  gatewayTLSWarnings,
  listenerProblems,
} from "./gateway";
export { backendTLSPolicyProblems, backendTLSPolicyStatusProblems } from "./backendtlspolicy";
export { gatewayClassProblems } from "./gatewayclass";
export { referenceGrantProblems } from "./referencegrant";
export { l4RouteProblems, MAX_L4_WEIGHT_RATIO } from "./l4route";
export { kengineParametersProblems, REPLICAS } from "./parameters";
export { denialMessage, problemText } from "./message";
export { checkKeyPair } from "./keypair";
export type { KeyPairResult } from "./keypair";
export {
  FOREIGN_ANNOTATION_PREFIXES,
  PATH_TYPES,
  checkIngressHost,
  checkIngressPath,
  ingressAnnotationProblems,
  ingressAnnotationWarnings,
  ingressProblems,
} from "./ingress";
export type { IngressLike } from "./ingress";
