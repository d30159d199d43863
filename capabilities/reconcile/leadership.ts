/**
 * This replica's leader election as the reconciler runs it: the Lease in the controller's
 * namespace, its metrics and log lines, and a warning when a renewal comes late. What leading
 * and following mean (the hooks) is the reconciler's.
 */
import { DEFAULT_ELECTION, ElectionConfig, LeaderElector, kubeLeaseStore } from "../election";
import type { KubeClient } from "../kube/client";
import { electionMetrics } from "../metrics";
import type { Logger } from "./logger";

export interface LeadershipOptions {
  readonly kube: KubeClient;
  readonly log: Logger;
  /** The Lease lives in the controller's namespace. */
  readonly namespace: string;
  readonly identity: string;
  readonly election?: Partial<Omit<ElectionConfig, "namespace" | "identity">>;
}

export interface LeadershipHooks {
  /** This replica leads: provision, push and write from now on. */
  readonly lead: () => void;
  /** This replica lost the Lease: stop provisioning, pushing and writing at once. */
  readonly follow: () => void;
}

export function leaderElector(o: LeadershipOptions, hooks: LeadershipHooks): LeaderElector {
  const election: ElectionConfig = {
    ...DEFAULT_ELECTION,
    name: "kengine-gateway-leader",
    ...o.election,
    namespace: o.namespace,
    identity: o.identity,
  };
  const leading = electionMetrics(election.name, o.identity);
  const leases = kubeLeaseStore(o.namespace, election.name, o.kube);
  return new LeaderElector(leases, election, {
    onStartedLeading: () => {
      leading.leading(true);
      o.log.info("became leader: provisioning, pushing and writing status", {
        identity: o.identity,
      });
      hooks.lead();
    },
    onStoppedLeading: () => {
      leading.leading(false);
      o.log.warn("lost leadership: stopped provisioning, pushing and writing", {
        identity: o.identity,
      });
      hooks.follow();
    },
    onNewLeader: id => o.log.info("following", { leader: id }),
    onError: e => o.log.debug("lease operation failed", { error: String(e) }),
    onAttempt: a => {
      leading.attempt(a);
      // A renewal past half the renew deadline: the API server is slow enough to cost leadership soon.
      if (a.sinceLastRenewMs !== undefined && a.sinceLastRenewMs > election.renewDeadlineMs / 2)
        o.log.warn("lease renewed late", {
          sinceLastRenewMs: a.sinceLastRenewMs,
          roundTripMs: a.ms,
          renewDeadlineMs: election.renewDeadlineMs,
        });
    },
  });
}
