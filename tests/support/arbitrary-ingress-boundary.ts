/**
 * fast-check arbitraries of what a tenant with Ingress rights can store in its own namespace to
 * break the tenant boundary of a shared Gateway that serves an IngressClass (docs/ingress.md):
 * hosts that claim the platform's name, wildcards or loopback; paths on the platform's route and
 * on the ACME challenge path; `tls` entries for the platform's name with the tenant's own
 * certificate, a Secret of another namespace or none; backends by Service port number or name,
 * missing Services and resource backends naming an XBackend aimed at the admin API; a default
 * backend; and the ingress-nginx annotations with values aimed at the admin API, Caddy
 * placeholders and snippets, read when the class opts in. The IngressClass (the platform's)
 * names the shared Gateway, is selected by name, by the legacy annotation or as the default.
 *
 * tests/integration/property-caddy.test.ts converts each sample as the controller does
 * (reconcile/ingress-stage.ts), loads it beside the platform's Gateway (`boundaryGateway`) into
 * a real Bundled proxy and asks as an anonymous client; `hosts` are the names the Ingress claims,
 * probed for the admin API as well.
 */
import fc from "fast-check";
import { KubeObject } from "../../capabilities/snapshot";
import { NGINX_ANNOTATIONS_OPT_IN } from "../../capabilities/ingress/classes";
import type { BoundaryPorts, BoundarySample } from "./arbitrary-boundary";
import {
  PLATFORM_HOST,
  PLATFORM_PATH,
  TENANT_HOST,
  TENANT_TOKEN,
  tenantTlsSecret,
} from "./arbitrary-boundary";
import { tenantMeta } from "./arbitrary-hostile";

const NGINX = "nginx.ingress.kubernetes.io/";

/** Hosts an Ingress rule or `tls` entry may claim. */
const claimedHost = fc.constantFrom(
  TENANT_HOST,
  PLATFORM_HOST,
  "*.example",
  "*.tenant.test",
  "localhost",
);

/** Annotation values aimed at the admin API, placeholders, other names and snippets. */
const hostileValues = (ports: BoundaryPorts) =>
  fc.constantFrom(
    `http://localhost:${ports.admin}/load`,
    "http://localhost:2019/config/",
    `localhost:${ports.admin}`,
    "localhost:2019",
    `127.0.0.1:${ports.admin}`,
    "{http.request.host}",
    "{env.HOME}",
    "{file./etc/passwd}",
    "/config/",
    "/../load",
    "/$1",
    `https://${PLATFORM_HOST}${PLATFORM_PATH}`,
    PLATFORM_HOST,
    "true",
    "false",
    "0",
    "99999999",
    "HTTPS",
    "GRPC",
    "FCGI",
    "proxy_pass http://127.0.0.1:2019;",
    "cookie",
    "X-Canary",
    "*",
    "0.0.0.0/0",
    "127.0.0.1/32, ::1",
    "15s",
    "3600",
    "None",
    "Strict",
    "None; Domain=evil.test",
    // auth-url: the tenant's own Service, the platform's (no grant), the proxies' admin
    // Service, the API server, loopback, outside names, nginx variables
    "http://echo:8080/verify",
    "http://echo.tenant.svc.cluster.local:8080/auth?x=1",
    "http://platform.default.svc:8080/",
    "http://gw-kengine-admin.default.svc:19443/load",
    "http://kubernetes.default.svc:443/",
    `http://127.0.0.1:${ports.admin}/load`,
    "https://$host/oauth2/auth",
    "X-User, Host",
    "Authorization",
  );

const annotationNames = fc.constantFrom(
  "permanent-redirect",
  "permanent-redirect-code",
  "temporal-redirect",
  "rewrite-target",
  "app-root",
  "upstream-vhost",
  "ssl-redirect",
  "force-ssl-redirect",
  "proxy-read-timeout",
  "backend-protocol",
  "server-snippet",
  "configuration-snippet",
  "canary",
  "use-regex",
  "enable-cors",
  "cors-allow-origin",
  "cors-allow-headers",
  "cors-expose-headers",
  "affinity",
  "session-cookie-name",
  "session-cookie-path",
  "canary-by-header",
  "canary-by-header-value",
  "canary-by-header-pattern",
  "canary-by-cookie",
  "server-alias",
  "proxy-body-size",
  "whitelist-source-range",
  "denylist-source-range",
  "proxy-connect-timeout",
  "proxy-send-timeout",
  "session-cookie-samesite",
  "auth-url",
  "auth-response-headers",
  "auth-signin",
);

/** The Ingress boundary samples whose destinations are the given ports. */
export function arbitraryIngressBoundary(ports: BoundaryPorts): fc.Arbitrary<BoundarySample> {
  // mostly backends that resolve, so that most samples are served beside the platform's routes
  const backend = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.constantFrom(
        { service: { name: "echo", port: { number: 8080 } } },
        { service: { name: "echo", port: { name: "http" } } },
      ),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        { service: { name: "missing", port: { number: 80 } } },
        { resource: { apiGroup: "gateway.networking.x-k8s.io", kind: "XBackend", name: "admin" } },
      ),
    },
  );
  const path = fc.record({
    path: fc.constantFrom(
      "/",
      PLATFORM_PATH,
      "/.well-known/acme-challenge",
      `/.well-known/acme-challenge/${TENANT_TOKEN}`,
      "/config",
    ),
    pathType: fc.constantFrom("Prefix", "Exact", "ImplementationSpecific"),
    backend,
  });
  const rule = fc.record({
    host: fc.option(claimedHost, { nil: undefined }),
    paths: fc.array(path, { minLength: 1, maxLength: 3 }),
  });
  const tls = fc.record({
    hosts: fc.uniqueArray(
      claimedHost.filter(h => h !== "localhost"),
      { maxLength: 2 },
    ),
    secretName: fc.constantFrom("tls-good", "tls-good", "platform-cert", undefined),
  });
  type TlsEntry = typeof tls extends fc.Arbitrary<infer T> ? T : never;
  return fc
    .record({
      selectedBy: fc.constantFrom("field", "legacy", "default"),
      nginx: fc.boolean(),
      rules: fc.array(rule, { minLength: 1, maxLength: 3 }),
      defaultBackend: fc.option(backend, { nil: undefined }),
      // half the samples without `tls`
      tls: fc.oneof(fc.constant<TlsEntry[]>([]), fc.array(tls, { minLength: 1, maxLength: 2 })),
      annotations: fc.oneof(
        fc.constant({}),
        fc.dictionary(annotationNames, hostileValues(ports), { minKeys: 1, maxKeys: 3 }),
      ),
    })
    .map((r): BoundarySample => {
      const annotations: Record<string, string> = {};
      for (const [k, v] of Object.entries(r.annotations)) annotations[`${NGINX}${k}`] = v;
      if (r.selectedBy === "legacy") annotations["kubernetes.io/ingress.class"] = "kengine";
      const objects: KubeObject[] = [
        {
          apiVersion: "networking.k8s.io/v1",
          kind: "IngressClass",
          metadata: {
            name: "kengine",
            generation: 1,
            annotations: {
              ...(r.nginx && { [NGINX_ANNOTATIONS_OPT_IN]: "true" }),
              ...(r.selectedBy === "default" && {
                "ingressclass.kubernetes.io/is-default-class": "true",
              }),
            },
          },
          spec: {
            controller: "kengine.io/ingress-controller",
            parameters: {
              apiGroup: "gateway.networking.k8s.io",
              kind: "Gateway",
              name: "gw",
              namespace: "default",
              scope: "Namespace",
            },
          },
        } as KubeObject,
        tenantTlsSecret(),
        {
          apiVersion: "gateway.networking.x-k8s.io/v1alpha1",
          kind: "XBackend",
          metadata: { ...tenantMeta("admin"), uid: "00000000-0000-4000-8000-00000000ad01" },
          spec: {
            type: "ExternalHostname",
            externalHostname: { hostname: "localhost" },
            port: { number: ports.admin },
          },
        } as KubeObject,
        {
          apiVersion: "networking.k8s.io/v1",
          kind: "Ingress",
          metadata: {
            ...tenantMeta("boundary-ingress"),
            uid: "00000000-0000-4000-8000-00000000ad02",
            annotations,
          },
          spec: {
            ...(r.selectedBy === "field" && { ingressClassName: "kengine" }),
            ...(r.defaultBackend && { defaultBackend: r.defaultBackend }),
            ...(r.tls.length > 0 && {
              tls: r.tls.map(t => ({
                ...(t.hosts.length > 0 && { hosts: t.hosts }),
                ...(t.secretName !== undefined && { secretName: t.secretName }),
              })),
            }),
            rules: r.rules.map(x => ({
              ...(x.host !== undefined && { host: x.host }),
              http: { paths: x.paths },
            })),
          },
        } as KubeObject,
      ];
      const hosts = [
        ...new Set(r.rules.flatMap(x => (x.host ? [x.host.replace(/^\*\./, "a.")] : []))),
      ];
      return { externalHostnames: "Denied", objects, hosts };
    });
}
