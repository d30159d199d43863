import { KubeObject } from "../../capabilities/snapshot";
import { ProxyFlavor } from "../../capabilities/flavor/proxy-flavor";
import { CONTROLLER_NAME } from "../../capabilities/ownership";

const GROUP = "gateway.kengine.io";
const KIND = "KengineParameters";
/** The parameters object added for a GatewayClass that references none. */
const ADDED = { name: "test-proxy-flavor", namespace: "default" };

type Params = KubeObject & { spec?: { proxy?: Record<string, unknown> } };
interface Ref {
  group?: string;
  kind?: string;
  name?: string;
  namespace?: string;
}

/**
 * `objects` as if every Gateway of ours ran proxies of `flavor`: each KengineParameters gets
 * `spec.proxy.flavor`, and each of our GatewayClasses without a parametersRef references an
 * added KengineParameters with only that flavour. Other objects are kept as they are.
 */
export function withProxyFlavor(objects: readonly KubeObject[], flavor: ProxyFlavor): KubeObject[] {
  const out = objects.map(o => {
    if (o.kind === KIND) {
      const p = o as Params;
      return { ...p, spec: { ...p.spec, proxy: { ...p.spec?.proxy, flavor } } } as KubeObject;
    }
    if (o.kind !== "GatewayClass") return o;
    const gc = o as KubeObject & { spec?: { controllerName?: string; parametersRef?: Ref } };
    if (gc.spec?.controllerName !== CONTROLLER_NAME || gc.spec.parametersRef) return o;
    return {
      ...gc,
      spec: { ...gc.spec, parametersRef: { group: GROUP, kind: KIND, ...ADDED } },
    } as KubeObject;
  });
  out.push({
    apiVersion: `${GROUP}/v1alpha1`,
    kind: KIND,
    metadata: { ...ADDED },
    spec: { proxy: { flavor } },
  } as KubeObject);
  return out;
}
