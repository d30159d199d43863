import { PeprModule } from "pepr";
import cfg from "./package.json";
import { Admission } from "./capabilities/admission";
import { Controller } from "./capabilities/controller";

new PeprModule(cfg, [Admission, Controller]);
