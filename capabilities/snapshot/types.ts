/**
 * Readonly, spec-named views of the objects the translator reads. They are structurally
 * compatible with the generated Gateway API types and the Kubernetes core objects, but only
 * name the fields translation uses, with the names the Gateway API spec uses.
 */
import type { XBackendSpec } from "../validation/xbackend";

export interface ObjectMeta {
  readonly name: string;
  readonly namespace?: string;
  readonly uid?: string;
  readonly generation?: number;
  readonly resourceVersion?: string;
  readonly creationTimestamp?: string;
  /** Set once the object's deletion began (e.g. a namespace being terminated). */
  readonly deletionTimestamp?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

export interface KubeObject {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: ObjectMeta;
}

/* ---------------------------------------------------------------- Gateway API */

export interface LocalObjectReference {
  readonly group?: string;
  readonly kind?: string;
  readonly name: string;
}

export interface SecretObjectReference {
  readonly group?: string;
  readonly kind?: string;
  readonly name: string;
  readonly namespace?: string;
}

export interface GatewayClass extends KubeObject {
  readonly spec: {
    readonly controllerName: string;
    readonly parametersRef?: LocalObjectReference & { readonly namespace?: string };
  };
}

export interface LabelSelectorRequirement {
  readonly key: string;
  readonly operator: "In" | "NotIn" | "Exists" | "DoesNotExist" | string;
  readonly values?: readonly string[];
}

export interface LabelSelector {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly LabelSelectorRequirement[];
}

export interface RouteGroupKind {
  readonly group?: string;
  readonly kind: string;
}

export interface AllowedRoutes {
  readonly namespaces?: {
    readonly from?: "All" | "Same" | "Selector" | string;
    readonly selector?: LabelSelector;
  };
  readonly kinds?: readonly RouteGroupKind[];
}

export interface GatewayTLSConfig {
  readonly mode?: "Terminate" | "Passthrough" | string;
  readonly certificateRefs?: readonly SecretObjectReference[];
  readonly options?: Readonly<Record<string, string>>;
}

export interface Listener {
  readonly name: string;
  readonly hostname?: string;
  readonly port: number;
  readonly protocol: string;
  readonly tls?: GatewayTLSConfig;
  readonly allowedRoutes?: AllowedRoutes;
  /** Pre-routing filters (Gateway API v1.7, GatewayListenerFilters): translate/listenerfilters.ts. */
  readonly filters?: ListenerFilters;
}

/** The HTTPExternalAuthFilter of a listener filter (the same type as HTTPRoute's). */
export interface HTTPExternalAuthFilter {
  readonly protocol: "HTTP" | "GRPC" | string;
  readonly backendRef: BackendObjectReference;
  readonly grpc?: { readonly allowedHeaders?: readonly string[] };
  readonly http?: {
    readonly path?: string;
    readonly allowedHeaders?: readonly string[];
    readonly allowedResponseHeaders?: readonly string[];
  };
  readonly forwardBody?: { readonly maxSize?: number };
}

export interface ListenerFilter {
  readonly type: "ExternalAuth" | "ExtensionRef" | string;
  readonly externalAuth?: HTTPExternalAuthFilter;
  readonly extensionRef?: LocalObjectReference;
}

export interface ListenerFilters {
  readonly requests?: readonly ListenerFilter[];
}

/** A reference to any object (ObjectReference): caCertificateRefs. */
export interface ObjectReference {
  readonly group: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string;
}

/** Client certificate validation of HTTPS listeners (Gateway spec.tls.frontend). */
export interface FrontendTLSValidation {
  readonly caCertificateRefs?: readonly ObjectReference[];
  readonly mode?: "AllowValidOnly" | "AllowInsecureFallback" | string;
}

export interface GatewayTLS {
  readonly backend?: { readonly clientCertificateRef?: SecretObjectReference };
  readonly frontend?: {
    readonly default?: { readonly validation?: FrontendTLSValidation };
    readonly perPort?: readonly {
      readonly port: number;
      readonly tls?: { readonly validation?: FrontendTLSValidation };
    }[];
  };
}

export interface Gateway extends KubeObject {
  readonly spec: {
    readonly gatewayClassName: string;
    readonly listeners?: readonly Listener[];
    readonly tls?: GatewayTLS;
    readonly addresses?: readonly {
      readonly type?: string;
      readonly value?: string;
      readonly routability?: string;
    }[];
    readonly allowedListeners?: {
      readonly namespaces?: { readonly from?: string; readonly selector?: LabelSelector };
    };
    readonly infrastructure?: {
      readonly labels?: Readonly<Record<string, string>>;
      readonly annotations?: Readonly<Record<string, string>>;
      readonly parametersRef?: LocalObjectReference;
    };
  };
}

export interface ParentReference {
  readonly group?: string;
  readonly kind?: string;
  readonly namespace?: string;
  readonly name: string;
  readonly sectionName?: string;
  readonly port?: number;
}

export interface ListenerSet extends KubeObject {
  readonly spec: {
    readonly parentRef: ParentReference;
    readonly listeners?: readonly Listener[];
  };
}

export interface HTTPHeader {
  readonly name: string;
  readonly value: string;
}

export interface HTTPHeaderFilter {
  readonly set?: readonly HTTPHeader[];
  readonly add?: readonly HTTPHeader[];
  readonly remove?: readonly string[];
}

export interface HTTPPathModifier {
  readonly type: "ReplaceFullPath" | "ReplacePrefixMatch" | string;
  readonly replaceFullPath?: string;
  readonly replacePrefixMatch?: string;
}

export interface HTTPRequestRedirectFilter {
  readonly scheme?: string;
  readonly hostname?: string;
  readonly path?: HTTPPathModifier;
  readonly port?: number;
  readonly statusCode?: number;
}

export interface HTTPURLRewriteFilter {
  readonly hostname?: string;
  readonly path?: HTTPPathModifier;
}

export interface BackendObjectReference {
  readonly group?: string;
  readonly kind?: string;
  readonly name: string;
  readonly namespace?: string;
  readonly port?: number;
}

export interface HTTPRequestMirrorFilter {
  readonly backendRef: BackendObjectReference;
  readonly percent?: number;
  readonly fraction?: { readonly numerator: number; readonly denominator?: number };
}

export interface HTTPCORSFilter {
  readonly allowOrigins?: readonly string[];
  readonly allowCredentials?: boolean;
  readonly allowMethods?: readonly string[];
  readonly allowHeaders?: readonly string[];
  readonly exposeHeaders?: readonly string[];
  readonly maxAge?: number;
}

export interface HTTPRouteRetry {
  readonly codes?: readonly number[];
  readonly attempts?: number;
  readonly backoff?: string;
}

export interface HTTPRouteFilter {
  readonly type: string;
  readonly requestHeaderModifier?: HTTPHeaderFilter;
  readonly responseHeaderModifier?: HTTPHeaderFilter;
  readonly requestRedirect?: HTTPRequestRedirectFilter;
  readonly urlRewrite?: HTTPURLRewriteFilter;
  readonly requestMirror?: HTTPRequestMirrorFilter;
  readonly extensionRef?: LocalObjectReference;
  readonly cors?: HTTPCORSFilter;
  readonly externalAuth?: unknown;
}

export interface HTTPPathMatch {
  readonly type?: "Exact" | "PathPrefix" | "RegularExpression" | string;
  readonly value?: string;
}

export interface HTTPHeaderMatch {
  readonly type?: "Exact" | "RegularExpression" | string;
  readonly name: string;
  readonly value: string;
}

export interface HTTPRouteMatch {
  readonly path?: HTTPPathMatch;
  readonly headers?: readonly HTTPHeaderMatch[];
  readonly queryParams?: readonly HTTPHeaderMatch[];
  readonly method?: string;
}

export interface HTTPBackendRef extends BackendObjectReference {
  readonly weight?: number;
  readonly filters?: readonly HTTPRouteFilter[];
}

export interface HTTPRouteTimeouts {
  readonly request?: string;
  readonly backendRequest?: string;
}

export interface HTTPRouteRule {
  readonly name?: string;
  readonly matches?: readonly HTTPRouteMatch[];
  readonly filters?: readonly HTTPRouteFilter[];
  readonly backendRefs?: readonly HTTPBackendRef[];
  readonly timeouts?: HTTPRouteTimeouts;
  readonly retry?: HTTPRouteRetry;
  readonly sessionPersistence?: unknown;
}

export interface HTTPRoute extends KubeObject {
  readonly spec: {
    readonly parentRefs?: readonly ParentReference[];
    readonly hostnames?: readonly string[];
    readonly rules?: readonly HTTPRouteRule[];
  };
}

export interface GRPCMethodMatch {
  readonly type?: "Exact" | "RegularExpression" | string;
  readonly service?: string;
  readonly method?: string;
}

export interface GRPCRouteMatch {
  readonly method?: GRPCMethodMatch;
  readonly headers?: readonly HTTPHeaderMatch[];
}

export interface GRPCRouteRule {
  readonly name?: string;
  readonly matches?: readonly GRPCRouteMatch[];
  readonly filters?: readonly HTTPRouteFilter[];
  readonly backendRefs?: readonly HTTPBackendRef[];
  readonly sessionPersistence?: unknown;
}

export interface GRPCRoute extends KubeObject {
  readonly spec: {
    readonly parentRefs?: readonly ParentReference[];
    readonly hostnames?: readonly string[];
    readonly rules?: readonly GRPCRouteRule[];
  };
}

export interface L4BackendRef extends BackendObjectReference {
  readonly weight?: number;
}

export interface L4RouteRule {
  readonly name?: string;
  readonly backendRefs?: readonly L4BackendRef[];
}

export interface TLSRoute extends KubeObject {
  readonly spec: {
    readonly parentRefs?: readonly ParentReference[];
    readonly hostnames?: readonly string[];
    readonly rules?: readonly L4RouteRule[];
  };
}

export interface TCPRoute extends KubeObject {
  readonly spec: {
    readonly parentRefs?: readonly ParentReference[];
    readonly rules?: readonly L4RouteRule[];
  };
}

export interface UDPRoute extends KubeObject {
  readonly spec: {
    readonly parentRefs?: readonly ParentReference[];
    readonly rules?: readonly L4RouteRule[];
  };
}

export interface ReferenceGrant extends KubeObject {
  readonly spec: {
    readonly from: readonly {
      readonly group: string;
      readonly kind: string;
      readonly namespace: string;
    }[];
    readonly to: readonly {
      readonly group: string;
      readonly kind: string;
      readonly name?: string;
    }[];
  };
}

export interface BackendTLSPolicy extends KubeObject {
  readonly spec: {
    readonly targetRefs: readonly (LocalObjectReference & { readonly sectionName?: string })[];
    readonly validation: {
      readonly caCertificateRefs?: readonly LocalObjectReference[];
      readonly wellKnownCACertificates?: string;
      readonly hostname: string;
      readonly subjectAltNames?: readonly unknown[];
    };
  };
}

/**
 * XBackend (gateway.networking.x-k8s.io/v1alpha1, experimental channel of v1.7.0): a backend
 * named by hostname (`ExternalHostname`) or by pod labels (`EndpointSelector`), read by
 * translate/xbackend.ts. Only the fields we read; the generated type has all of them.
 */
export interface XBackend extends KubeObject {
  readonly spec?: XBackendSpec;
}

/**
 * XTelemetryPolicy (gateway.networking.x-k8s.io/v1alpha1, experimental channel of v1.7.0):
 * tracing for the Gateways it targets, read by validation/telemetry.ts and
 * translate/telemetry.ts. Only the fields we read; the generated type has all of them.
 */
export interface XTelemetryPolicy extends KubeObject {
  readonly spec?: {
    readonly targetRefs?: readonly LocalObjectReference[];
    /** Read by validation/telemetry.ts (TelemetryPolicyLike). */
    readonly tracing?: Readonly<Record<string, unknown>>;
  };
}

export const X_GATEWAY_GROUP = "gateway.networking.x-k8s.io";

/* ---------------------------------------------------------------- core/v1, discovery/v1 */

export interface ServicePort {
  readonly name?: string;
  readonly port: number;
  readonly protocol?: string;
  readonly targetPort?: number | string;
  readonly appProtocol?: string;
}

export interface Service extends KubeObject {
  readonly spec?: {
    readonly type?: string;
    readonly clusterIP?: string;
    readonly externalName?: string;
    readonly ports?: readonly ServicePort[];
    readonly selector?: Readonly<Record<string, string>>;
  };
}

export interface EndpointPort {
  readonly name?: string;
  readonly port?: number;
  readonly protocol?: string;
  readonly appProtocol?: string;
}

export interface Endpoint {
  readonly addresses: readonly string[];
  readonly conditions?: {
    readonly ready?: boolean;
    readonly serving?: boolean;
    readonly terminating?: boolean;
  };
}

export interface EndpointSlice extends KubeObject {
  readonly addressType?: "IPv4" | "IPv6" | "FQDN" | string;
  readonly endpoints?: readonly Endpoint[];
  readonly ports?: readonly EndpointPort[];
}

export interface Secret extends KubeObject {
  readonly type?: string;
  readonly data?: Readonly<Record<string, string>>;
}

export interface ConfigMap extends KubeObject {
  readonly data?: Readonly<Record<string, string>>;
}

export type Namespace = KubeObject;

/**
 * A cluster-scoped bundle of trusted CA certificates (certificates.k8s.io/v1beta1; Kubernetes
 * ≥ 1.33 with the ClusterTrustBundle feature gate and API on): `trustBundle` is PEM.
 */
export interface ClusterTrustBundle extends KubeObject {
  readonly spec?: { readonly signerName?: string; readonly trustBundle?: string };
}

/** Our own parameters resource (gateway.kengine.io/v1alpha1), see provision/parameters.ts. */
export interface KengineParameters extends KubeObject {
  readonly spec?: Readonly<Record<string, unknown>>;
}

/**
 * networking.k8s.io/v1 Ingress and IngressClass (docs/ingress.md): read by ingress/ as the
 * client-node types; the build stage converts the Ingresses of our classes into HTTPRoutes and
 * ListenerSets before translation (reconcile/ingress-stage.ts).
 */
export interface Ingress extends KubeObject {
  readonly spec?: Readonly<Record<string, unknown>>;
  readonly status?: Readonly<Record<string, unknown>>;
}
export interface IngressClass extends KubeObject {
  readonly spec?: Readonly<Record<string, unknown>>;
}

/** Every kind the snapshot holds, with the object type of each. */
export interface KindMap {
  readonly GatewayClass: GatewayClass;
  readonly Gateway: Gateway;
  readonly ListenerSet: ListenerSet;
  readonly HTTPRoute: HTTPRoute;
  readonly GRPCRoute: GRPCRoute;
  readonly TLSRoute: TLSRoute;
  readonly TCPRoute: TCPRoute;
  readonly UDPRoute: UDPRoute;
  readonly ReferenceGrant: ReferenceGrant;
  readonly BackendTLSPolicy: BackendTLSPolicy;
  readonly XBackend: XBackend;
  readonly XTelemetryPolicy: XTelemetryPolicy;
  readonly Service: Service;
  readonly EndpointSlice: EndpointSlice;
  readonly Secret: Secret;
  readonly ConfigMap: ConfigMap;
  readonly ClusterTrustBundle: ClusterTrustBundle;
  readonly Namespace: Namespace;
  readonly KengineParameters: KengineParameters;
  readonly Ingress: Ingress;
  readonly IngressClass: IngressClass;
}

export type Kind = keyof KindMap;

export const KINDS: readonly Kind[] = [
  "GatewayClass",
  "Gateway",
  "ListenerSet",
  "HTTPRoute",
  "GRPCRoute",
  "TLSRoute",
  "TCPRoute",
  "UDPRoute",
  "ReferenceGrant",
  "BackendTLSPolicy",
  "XBackend",
  "XTelemetryPolicy",
  "Service",
  "EndpointSlice",
  "Secret",
  "ConfigMap",
  "ClusterTrustBundle",
  "Namespace",
  "KengineParameters",
  "Ingress",
  "IngressClass",
];

export const GATEWAY_GROUP = "gateway.networking.k8s.io";
