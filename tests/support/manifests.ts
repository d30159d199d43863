import { readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "./paths";

/**
 * Manifests the integration tests apply more than once: plain objects, ready for
 * `kubectl apply -f -` as JSON.
 */

/**
 * The conformance suite's echo server as a backend: Deployment `echo` (1 replica, Ready once
 * it answers on :3000) and Service `echo` (port 8080 named http → 3000) in `namespace`.
 */
export function echoBackend(namespace: string): object[] {
  return [
    {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "echo", namespace },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: "echo" } },
        template: {
          metadata: { labels: { app: "echo" } },
          spec: {
            containers: [
              {
                name: "echo",
                image: "registry.k8s.io/gateway-api/echo-basic:v1.6.1",
                env: [
                  { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
                  {
                    name: "NAMESPACE",
                    valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } },
                  },
                ],
                ports: [{ containerPort: 3000 }],
                readinessProbe: { httpGet: { path: "/", port: 3000 }, periodSeconds: 2 },
              },
            ],
          },
        },
      },
    },
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "echo", namespace },
      spec: {
        selector: { app: "echo" },
        ports: [{ name: "http", port: 8080, targetPort: 3000 }],
      },
    },
  ];
}

/**
 * `npm start`'s sample (hack/samples/demo.yaml: echo backend, GatewayClass, Gateway, route)
 * moved into `namespace` with its hostname replaced by `host`; without its Namespace object.
 */
export function demoSample(namespace: string, host: string): string {
  return readFileSync(join(repoRoot, "hack", "samples", "demo.yaml"), "utf8")
    .split(/^---$/m)
    .filter(doc => !/kind: Namespace/.test(doc))
    .join("---")
    .replace(/namespace: kengine-demo/g, `namespace: ${namespace}`)
    .replace(/demo\.kengine\.local/g, host);
}

/** A logger for a Reconciler under test: only errors are printed. */
export const quietLogger = {
  info: () => {},
  warn: () => {},
  error: (m: string, meta?: object) => console.error(m, meta),
  debug: () => {},
};

/** Our GatewayClass (controllerName kengine.io/gateway-controller) named `name`. */
export const gatewayClass = (name: string): object => ({
  apiVersion: "gateway.networking.k8s.io/v1",
  kind: "GatewayClass",
  metadata: { name },
  spec: { controllerName: "kengine.io/gateway-controller" },
});

/** A Gateway of class `cls` with one HTTP listener on port 80 (and spec.addresses if given). */
export const httpGateway = (
  ns: string,
  name: string,
  cls: string,
  addresses?: object[],
): object => ({
  apiVersion: "gateway.networking.k8s.io/v1",
  kind: "Gateway",
  metadata: { name, namespace: ns },
  spec: {
    gatewayClassName: cls,
    ...(addresses && { addresses }),
    listeners: [{ name: "http", port: 80, protocol: "HTTP" }],
  },
});

/** HTTPRoute `echo` for `host` on the Gateways `parents`, to echoBackend's Service (rule extras merged in). */
export const echoRoute = (
  ns: string,
  parents: readonly string[],
  host: string,
  rule: object = {},
): object => ({
  apiVersion: "gateway.networking.k8s.io/v1",
  kind: "HTTPRoute",
  metadata: { name: "echo", namespace: ns },
  spec: {
    parentRefs: parents.map(name => ({ name })),
    hostnames: [host],
    rules: [{ ...rule, backendRefs: [{ name: "echo", port: 8080 }] }],
  },
});

/**
 * YAML: a GatewayClass `cls` of ours, a Service `echo` without endpoints and a Gateway `gw` of
 * that class in `ns` with one HTTP listener on port 80 (`allowedRoutes` as given).
 */
export const classAndGateway = (ns: string, cls: string, allowedRoutes = ""): string =>
  `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: ${cls}}
spec: {controllerName: kengine.io/gateway-controller}
---
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: ${ns}}
spec: {ports: [{name: http, port: 8080}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: ${ns}}
spec:
  gatewayClassName: ${cls}
  listeners: [{name: http, port: 80, protocol: HTTP${allowedRoutes ? `, allowedRoutes: ${allowedRoutes}` : ""}}]
`;
