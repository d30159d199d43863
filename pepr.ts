import { PeprModule } from "pepr";
import cfg from "./package.json";
import { Admission } from "./capabilities/admission";
import { Controller } from "./capabilities/controller";
import { keepWebhookConnectionsAlive } from "./capabilities/webhook-keepalive";

// Before Pepr creates its webhook server (capabilities/webhook-keepalive.ts says why).
keepWebhookConnectionsAlive();
new PeprModule(cfg, [Admission, Controller]);
