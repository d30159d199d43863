/**
 * The controller: Watch bindings that feed the snapshot. Registration only.
 */
import { Capability } from "pepr";
import { Gateway } from "./generated";
import { log } from "./log";

export const Controller = new Capability({
  name: "kengine-controller",
  description: "Watches Gateway API objects and programs Kengine proxies.",
});

const { When } = Controller;

export function onGateway(gw: Gateway, phase: string): void {
  log.info("gateway event", {
    phase,
    gateway: `${gw.metadata?.namespace}/${gw.metadata?.name}`,
    gatewayClassName: gw.spec?.gatewayClassName,
  });
}

When(Gateway).IsCreatedOrUpdated().Watch(onGateway);
When(Gateway).IsDeleted().Watch(onGateway);
