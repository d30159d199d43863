/**
 * A Gateway's proxies read as the controller reads them: over the management channel (mutual
 * TLS on the pod IP, docs/architecture.md), with a client certificate issued from the
 * controller's admin CA (the Secret the controller keeps in its namespace). For tests that
 * check what a proxy really runs, not what the controller says it runs.
 */
import { proxyNames } from "../../capabilities/provision";
import {
  generateKeyPair,
  issueClientCertificate,
  loadAuthority,
  proxyServerName,
} from "../../capabilities/pki/pki";
import { AdminClient, type ProxyEndpoint } from "../../capabilities/proxies";
import { DEFAULT_MANAGEMENT_PORT } from "../../capabilities/validation/ports";
import { kubectlOk } from "./kube";

/** A client of the controller's admin CA in `controllerNamespace` (close it after use). */
export function adminClient(controllerNamespace = "pepr-system"): AdminClient {
  const secret = JSON.parse(
    kubectlOk([
      "get",
      "secret",
      "kengine-gateway-admin-ca",
      "-n",
      controllerNamespace,
      "-o",
      "json",
    ]),
  ) as { data: Record<string, string> };
  const decode = (k: string) => Buffer.from(secret.data[k] ?? "", "base64").toString("utf8");
  const ca = loadAuthority(decode("tls.crt"), decode("tls.key"));
  if (!ca.ok) throw new Error(`admin CA: ${ca.error}`);
  const client = issueClientCertificate(ca.value, {
    commonName: "e2e test reader",
    keys: generateKeyPair(),
    notBefore: new Date(Date.now() - 60_000),
    lifetimeDays: 1,
  });
  if (!client.ok) throw new Error(`client certificate: ${client.error}`);
  return new AdminClient({
    caPem: ca.value.certificatePem,
    certificatePem: client.value.certificatePem,
    privateKey: client.value.privateKey,
  });
}

/** The management endpoints of a Gateway's proxy pods (not those being deleted). */
export function proxyEndpoints(ns: string, gateway: string): ProxyEndpoint[] {
  return (
    kubectlOk([
      "get",
      "pods",
      "-n",
      ns,
      "-l",
      `gateway.networking.k8s.io/gateway-name=${gateway},app.kubernetes.io/component=proxy`,
      "-o",
      'jsonpath={range .items[?(@.status.podIP)]}{.metadata.name},{.status.podIP},{.metadata.deletionTimestamp}{"\\n"}{end}',
    ])
      .trim()
      .split("\n")
      .filter(Boolean)
      .map(l => l.split(","))
      // a terminating pod (an old ReplicaSet's, after a rollout) is no longer one of the proxies
      .filter(([, , deleting]) => !deleting)
      .map(([pod = "", address = ""]) => {
        return {
          name: pod,
          address,
          port: DEFAULT_MANAGEMENT_PORT,
          serverName: proxyServerName(pod, proxyNames(gateway).admin, ns),
        };
      })
  );
}
