/**
 * The flags of npm run conformance (hack/conformance.ts) and the suite releases it can run:
 * pure parsing, kept apart from the run so that hack/conformance.test.ts can check it.
 */
import { join } from "node:path";
import { hack } from "./conformance-cluster";

const defaultProfiles = "GATEWAY-HTTP,GATEWAY-GRPC,GATEWAY-TLS";
/** Static addresses for GatewayStaticAddresses on the local load balancer (hack/node/loadbalancer.ts). */
const defaultAddresses = { usable: "127.20.250.1", unusable: "192.0.2.1" };
const knownProfiles = [
  "GATEWAY-HTTP",
  "GATEWAY-GRPC",
  "GATEWAY-TLS",
  "GATEWAY-TCP",
  "GATEWAY-UDP",
  "MESH-HTTP",
  "MESH-GRPC",
];

/**
 * The suite releases this script can run. v1.6.1 is hack/go.mod's (the module the control plane
 * and echo-basic are built from); v1.7.0 has a module of its own, hack/peers/conformance,
 * because it needs Go 1.27 and the Kubernetes 0.37 modules (GOTOOLCHAIN=auto fetches the
 * toolchain its go.mod names from the module proxy).
 */
export const suiteVersions = {
  // The cluster installs v1.7.0's CRDs (hack/build-peers.sh); suite v1.6.1 refuses to run on
  // CRDs of another release, so its run installs v1.6.1's first (installSuiteCrds).
  "v1.6.1": { dir: hack, pkg: "./conformance", env: {}, images: false, crds: "v1.6.1" },
  "v1.7.0": {
    dir: join(hack, "peers", "conformance"),
    pkg: ".",
    env: { GOTOOLCHAIN: "auto" },
    images: true,
  },
} as const;
export type SuiteVersion = keyof typeof suiteVersions;
export const defaultVersion: SuiteVersion = "v1.6.1";

export const usage = `usage: npm run conformance -- [flags]
  --profiles=LIST         conformance profiles (default ${defaultProfiles})
  --version=V             the suite's release: ${Object.keys(suiteVersions).join(" or ")} (default ${defaultVersion})
  --run-test=NAME         run one test (e.g. HTTPRouteSimpleSameNamespace); features still come from the GatewayClass
  --skip-tests=A,B        skip these tests (they are listed as skipped in the report)
  --deployed              run the module as \`npx pepr deploy\` installs it (dist/, rebuilt unless it is a build of the
                          sources as they are; Pepr's controller image on the node) instead of \`pepr dev\`
  --strict                exit 1 when any test failed (default: 0 whenever the suite completed)
  --ingress               also run the upstream Ingress conformance suite (npm run conformance:ingress, with
                          --strict if given) beside this one, against the same controller; the exit code is the
                          worse of the two
  --debug                 the suite's debug logging (request/response dumps)
  --continue-after-setup-failure
                          run the tests even if the suite's setup fails (e.g. one base Pod never Ready);
                          the report is then marked as measured against an incomplete setup
  --no-cleanup            keep the suite's base resources (namespaces gateway-conformance-*) afterwards
  --timeout-overrides=S   the suite's timeout overrides, e.g. 'GatewayMustHaveAddress:300;NamespacesMustBeReady:900'
  --gateway-class=NAME    GatewayClass to create and test (default kengine)
  --gwc-timeout=SECONDS   how long to wait for the GatewayClass to be Accepted with features (default 120)
  --usable-address=IP     the suite's -usable-address for GatewayStaticAddresses (default ${defaultAddresses.usable}:
                          outside the range the local load balancer hands out by itself, so always free)
  --unusable-address=IP   the suite's -unusable-address (default ${defaultAddresses.unusable}: the local load balancer
                          serves only 127.20.0.0/16)
environment:
  KG_CONTROLLER=external  do not start pepr dev (nor deploy with --deployed); a controller is already running against the cluster
  KG_KEEP_CLUSTER=1       leave the cluster running even if this run started it
  KG_LOCAL_DIR=DIR        use another local cluster instance (default .local/)
  KG_CONFORMANCE_URL, KG_CONFORMANCE_CONTACT   implementation url / contact for the report`;

export interface Options {
  version: SuiteVersion;
  profiles: string;
  runTest?: string;
  skipTests?: string;
  strict: boolean;
  /** The module as `npx pepr deploy` installs it (hack/deployed.ts) instead of `pepr dev`. */
  deployed: boolean;
  /** The Ingress conformance suite beside this one (hack/conformance-ingress.ts). */
  ingress: boolean;
  debug: boolean;
  cleanup: boolean;
  continueAfterSetupFailure: boolean;
  timeoutOverrides?: string;
  gatewayClass: string;
  gwcTimeoutS: number;
  usableAddress: string;
  unusableAddress: string;
}

export class UsageError extends Error {}

export function parseArgs(argv: readonly string[]): Options {
  const o: Options = {
    version: defaultVersion,
    profiles: defaultProfiles,
    strict: false,
    deployed: false,
    ingress: false,
    debug: false,
    cleanup: true,
    continueAfterSetupFailure: false,
    gatewayClass: "kengine",
    gwcTimeoutS: 120,
    usableAddress: defaultAddresses.usable,
    unusableAddress: defaultAddresses.unusable,
  };
  for (const a of argv) {
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(a);
    if (!m) throw new UsageError(`unexpected argument ${a}`);
    const [, name, value] = m;
    const need = (): string => {
      if (value === undefined || value === "")
        throw new UsageError(`--${name} needs a value (--${name}=...)`);
      return value;
    };
    switch (name) {
      case "profiles":
        o.profiles = need();
        for (const p of o.profiles.split(","))
          if (!knownProfiles.includes(p))
            throw new UsageError(`unknown profile ${p} (known: ${knownProfiles.join(", ")})`);
        break;
      case "version": {
        const v = need();
        if (!(v in suiteVersions))
          throw new UsageError(
            `unknown suite version ${v} (known: ${Object.keys(suiteVersions).join(", ")})`,
          );
        o.version = v as SuiteVersion;
        break;
      }
      case "run-test":
        o.runTest = need();
        break;
      case "skip-tests":
        o.skipTests = need();
        break;
      case "strict":
        o.strict = true;
        break;
      case "deployed":
        if (value !== undefined) throw new UsageError("--deployed takes no value");
        o.deployed = true;
        break;
      case "ingress":
        if (value !== undefined) throw new UsageError("--ingress takes no value");
        o.ingress = true;
        break;
      case "debug":
        o.debug = true;
        break;
      case "continue-after-setup-failure":
        o.continueAfterSetupFailure = true;
        break;
      case "no-cleanup":
        o.cleanup = false;
        break;
      case "timeout-overrides":
        o.timeoutOverrides = need();
        break;
      case "gateway-class":
        o.gatewayClass = need();
        break;
      case "gwc-timeout":
        o.gwcTimeoutS = Number(need());
        if (!Number.isFinite(o.gwcTimeoutS) || o.gwcTimeoutS <= 0)
          throw new UsageError("--gwc-timeout needs seconds > 0");
        break;
      case "usable-address":
        o.usableAddress = need();
        break;
      case "unusable-address":
        o.unusableAddress = need();
        break;
      case "help":
        throw new UsageError("");
      default:
        throw new UsageError(`unknown flag --${name}`);
    }
  }
  return o;
}
