/** A build stage for unit tests: the controller's CA made once, isolation letting everything through. */
import { createAuthority, generateKeyPair } from "../../pki/pki";
import { DEFAULT_PROXY_SETTINGS } from "../../provision";
import { BuildStage } from "../build-stage";
import type { GatedPlan } from "../isolation";

export const testNow = new Date("2026-11-20T00:00:00Z");

const signing = (() => {
  const r = createAuthority({
    commonName: "controller CA",
    keys: generateKeyPair(),
    notBefore: testNow,
    lifetimeDays: 3650,
  });
  if (!r.ok) throw new Error(r.error);
  return r.value;
})();

/** The admin CA a build stage signs with and trusts. */
export const testCa = { signing, trusted: [signing.certificatePem] };

export function testBuildStage(): BuildStage {
  const isolation = {
    refused: () => [],
    gate: <P extends GatedPlan>(plan: P): P => plan,
    retain: () => {},
  };
  return new BuildStage({
    defaults: DEFAULT_PROXY_SETTINGS,
    namespace: "kengine-system",
    log: { warn() {}, error() {} },
    isolation,
  });
}
