/**
 * The automatic HTTPS suites' setting (tests/integration/acme-*.test.ts): a real Pebble
 * (hack/pebble.ts) whose DNS answers the Gateway's address, a class whose KengineParameters
 * declare the issuer, and a Gateway with an HTTP listener on 80 (where HTTP-01 is answered)
 * and an HTTPS listener on 443 with no certificate, only `tls.options` naming the issuer.
 */
import { connect } from "node:tls";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Pebble, startPebble } from "../../hack/pebble";
import { ACME_ISSUER_OPTION } from "../../capabilities/validation/acme";
import { createNamespace, deleteNamespace, kubectl, kubectlOk } from "./kube";
import { echoBackend } from "./manifests";

export const GW = "shop";
export const ISSUER = "pebble";

export interface AcmeSetting {
  readonly ns: string;
  readonly cls: string;
  readonly name: string;
  readonly pebble: Pebble;
  /** The Gateway's address (127.20.x.y) once it has one. */
  address(): string | undefined;
  /** The HTTPS listener's condition: `status|reason|message`. */
  listener(type: string): string;
  /** Stops Pebble, deletes the class and the namespace. */
  close(): Promise<void>;
}

const jsonpath = (args: string[], path: string): string =>
  kubectl([...args, "-o", `jsonpath=${path}`]).stdout.trim();

export async function acmeSetting(
  prefix: string,
  o: {
    readonly replicas: number;
    readonly validitySeconds?: number;
    /** Pebble's DNS also answers every `*.<namespace>.example.com` (an Ingress's hosts). */
    readonly namespaceDomain?: boolean;
  },
): Promise<AcmeSetting> {
  const ns = createNamespace(prefix);
  const cls = `${prefix}-${Date.now().toString(36)}`;
  const name = `shop.${ns}.example.com`;
  let address: string | undefined;
  const addressOf = (): string | undefined =>
    (address ??=
      jsonpath(["get", "gateway", GW, "-n", ns], "{.status.addresses[0].value}") || undefined);
  const pebble = await startPebble({
    dir: mkdtempSync(join(tmpdir(), `kg-${prefix}-`)),
    resolve: n =>
      n === name || (o.namespaceDomain && n.endsWith(`.${ns}.example.com`))
        ? addressOf()
        : undefined,
    ...(o.validitySeconds !== undefined && { validitySeconds: o.validitySeconds }),
  });
  kubectlOk(
    ["apply", "-f", "-"],
    JSON.stringify({ apiVersion: "v1", kind: "List", items: echoBackend(ns) }),
  );
  kubectlOk(
    ["apply", "-f", "-"],
    JSON.stringify({
      apiVersion: "v1",
      kind: "List",
      items: [
        {
          apiVersion: "gateway.kengine.io/v1alpha1",
          kind: "KengineParameters",
          metadata: { name: "fleet", namespace: ns },
          spec: {
            proxy: { replicas: o.replicas },
            acme: {
              issuers: [
                {
                  name: ISSUER,
                  server: pebble.directory,
                  email: "ops@example.com",
                  caBundle: pebble.tlsCaPem,
                  challenge: "http-01",
                },
              ],
            },
          },
        },
        {
          apiVersion: "gateway.networking.k8s.io/v1",
          kind: "GatewayClass",
          metadata: { name: cls },
          spec: {
            controllerName: "kengine.io/gateway-controller",
            parametersRef: {
              group: "gateway.kengine.io",
              kind: "KengineParameters",
              name: "fleet",
              namespace: ns,
            },
          },
        },
        {
          apiVersion: "gateway.networking.k8s.io/v1",
          kind: "Gateway",
          metadata: { name: GW, namespace: ns },
          spec: {
            gatewayClassName: cls,
            listeners: [
              { name: "http", protocol: "HTTP", port: 80 },
              {
                name: "https",
                protocol: "HTTPS",
                port: 443,
                hostname: name,
                tls: { mode: "Terminate", options: { [ACME_ISSUER_OPTION]: ISSUER } },
              },
            ],
          },
        },
        {
          apiVersion: "gateway.networking.k8s.io/v1",
          kind: "HTTPRoute",
          metadata: { name: "echo", namespace: ns },
          spec: {
            parentRefs: [{ name: GW, sectionName: "https" }],
            rules: [{ backendRefs: [{ name: "echo", port: 8080 }] }],
          },
        },
      ],
    }),
  );
  return {
    ns,
    cls,
    name,
    pebble,
    address: addressOf,
    async close() {
      await pebble.close();
      kubectl(["delete", "gatewayclass", cls, "--ignore-not-found"]);
      deleteNamespace(ns);
    },
    listener: type =>
      jsonpath(
        ["get", "gateway", GW, "-n", ns],
        `{.status.listeners[?(@.name=='https')].conditions[?(@.type=='${type}')].status}|{.status.listeners[?(@.name=='https')].conditions[?(@.type=='${type}')].reason}|{.status.listeners[?(@.name=='https')].conditions[?(@.type=='${type}')].message}`,
      ),
  };
}

export interface Served {
  /** The HTTP status of GET / (0: the request failed). */
  readonly status: number;
  /** The serial of the certificate the server presented. */
  readonly serial?: string;
  readonly error?: string;
}

/**
 * GET https://<name>/ from `address`:443 (SNI and Host `name`), the certificate verified
 * against `root` (Pebble's): the serial it presented and the answer.
 */
export function httpsVerified(address: string, name: string, root: string): Promise<Served> {
  if (!/^127\./.test(address) && !/^10\.244\.0\./.test(address))
    return Promise.resolve({ status: 0, error: `refusing to connect to ${address}` });
  return new Promise(resolve => {
    const socket = connect({ host: address, port: 443, servername: name, ca: root });
    const done = (r: Served) => {
      socket.destroy();
      resolve(r);
    };
    socket.setTimeout(5000, () => done({ status: 0, error: "timeout" }));
    socket.on("error", e => done({ status: 0, error: e.message }));
    socket.on("secureConnect", () => {
      const serial = socket.getPeerCertificate().serialNumber;
      socket.write(`GET / HTTP/1.1\r\nHost: ${name}\r\nConnection: close\r\n\r\n`);
      let text = "";
      socket.on("data", (d: Buffer) => (text += d.toString("utf8")));
      socket.on("end", () =>
        done({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), serial }),
      );
    });
  });
}
