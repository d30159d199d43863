/** A managed Gateway's proxy pods as kubectl sees them (name, uid, Ready, being deleted). */
import { kubectl } from "./kube";

export interface ProxyPod {
  readonly name: string;
  readonly uid: string;
  readonly ready: boolean;
  readonly deleting: boolean;
}

export function proxyPods(namespace: string, gateway: string): ProxyPod[] {
  return kubectl([
    "get",
    "pods",
    "-n",
    namespace,
    "-l",
    `gateway.networking.k8s.io/gateway-name=${gateway},app.kubernetes.io/component=proxy`,
    "-o",
    `jsonpath={range .items[*]}{.metadata.name},{.metadata.uid},{.status.conditions[?(@.type=='Ready')].status},{.metadata.deletionTimestamp}{"\\n"}{end}`,
  ])
    .stdout.trim()
    .split("\n")
    .filter(Boolean)
    .map(l => {
      const [name = "", uid = "", ready, deleting] = l.split(",");
      return { name, uid, ready: ready === "True", deleting: Boolean(deleting) };
    });
}
