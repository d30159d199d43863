/** The parts of the core/v1 Pod, ConfigMap and Secret shapes the kubelet reads. */
import type { KubeObject } from "./api";

export interface EnvVar {
  readonly name: string;
  readonly value?: string;
  readonly valueFrom?: {
    readonly fieldRef?: { readonly fieldPath: string };
    readonly configMapKeyRef?: {
      readonly name: string;
      readonly key: string;
      readonly optional?: boolean;
    };
    readonly secretKeyRef?: {
      readonly name: string;
      readonly key: string;
      readonly optional?: boolean;
    };
    readonly resourceFieldRef?: { readonly resource: string };
  };
}

export interface EnvFromSource {
  readonly prefix?: string;
  readonly configMapRef?: { readonly name: string; readonly optional?: boolean };
  readonly secretRef?: { readonly name: string; readonly optional?: boolean };
}

export interface HTTPGetAction {
  readonly path?: string;
  readonly port: number | string;
  readonly host?: string;
  readonly scheme?: string;
  readonly httpHeaders?: readonly { name: string; value: string }[];
}

export interface Probe {
  readonly httpGet?: HTTPGetAction;
  readonly tcpSocket?: { readonly port: number | string; readonly host?: string };
  readonly exec?: { readonly command?: readonly string[] };
  readonly grpc?: { readonly port: number };
  readonly initialDelaySeconds?: number;
  readonly periodSeconds?: number;
  readonly timeoutSeconds?: number;
  readonly successThreshold?: number;
  readonly failureThreshold?: number;
}

export interface ContainerPort {
  readonly name?: string;
  readonly containerPort: number;
  readonly protocol?: string;
}

export interface VolumeMount {
  readonly name: string;
  readonly mountPath: string;
  readonly subPath?: string;
  readonly readOnly?: boolean;
}

export interface Container {
  readonly name: string;
  readonly image?: string;
  readonly command?: readonly string[];
  readonly args?: readonly string[];
  readonly workingDir?: string;
  readonly env?: readonly EnvVar[];
  readonly envFrom?: readonly EnvFromSource[];
  readonly ports?: readonly ContainerPort[];
  readonly volumeMounts?: readonly VolumeMount[];
  readonly readinessProbe?: Probe;
  readonly livenessProbe?: Probe;
  readonly startupProbe?: Probe;
  /** preStop hooks; the local kubelet runs `sleep` (lifecycle.ts). */
  readonly lifecycle?: {
    readonly preStop?: {
      readonly sleep?: { readonly seconds: number };
      readonly exec?: { readonly command?: readonly string[] };
      readonly httpGet?: Readonly<Record<string, unknown>>;
    };
  };
}

export interface KeyToPath {
  readonly key: string;
  readonly path: string;
  readonly mode?: number;
}

export interface DownwardAPIFile {
  readonly path: string;
  readonly fieldRef?: { readonly fieldPath: string };
  readonly mode?: number;
}

export interface Volume {
  readonly name: string;
  readonly emptyDir?: { readonly medium?: string };
  readonly configMap?: {
    readonly name: string;
    readonly items?: readonly KeyToPath[];
    readonly optional?: boolean;
    readonly defaultMode?: number;
  };
  readonly secret?: {
    readonly secretName: string;
    readonly items?: readonly KeyToPath[];
    readonly optional?: boolean;
    readonly defaultMode?: number;
  };
  readonly downwardAPI?: { readonly items?: readonly DownwardAPIFile[] };
  readonly projected?: {
    readonly defaultMode?: number;
    readonly sources?: readonly {
      readonly serviceAccountToken?: {
        readonly path: string;
        readonly audience?: string;
        readonly expirationSeconds?: number;
      };
      readonly configMap?: {
        readonly name: string;
        readonly items?: readonly KeyToPath[];
        readonly optional?: boolean;
      };
      readonly secret?: {
        readonly name: string;
        readonly items?: readonly KeyToPath[];
        readonly optional?: boolean;
      };
      readonly downwardAPI?: { readonly items?: readonly DownwardAPIFile[] };
    }[];
  };
}

export interface PodSpec {
  readonly nodeName?: string;
  readonly containers: readonly Container[];
  readonly initContainers?: readonly Container[];
  readonly volumes?: readonly Volume[];
  readonly restartPolicy?: "Always" | "OnFailure" | "Never";
  readonly terminationGracePeriodSeconds?: number;
  readonly serviceAccountName?: string;
  readonly hostname?: string;
  readonly hostNetwork?: boolean;
}

export interface PodCondition {
  readonly type: string;
  readonly status: string;
  readonly reason?: string;
  readonly message?: string;
  readonly lastProbeTime?: string | null;
  readonly lastTransitionTime?: string;
}

export type ContainerState =
  | { readonly waiting: { readonly reason: string; readonly message?: string } }
  | { readonly running: { readonly startedAt: string } }
  | {
      readonly terminated: {
        readonly exitCode: number;
        readonly signal?: number;
        readonly reason: string;
        readonly message?: string;
        readonly startedAt?: string;
        readonly finishedAt: string;
      };
    };

export interface ContainerStatus {
  readonly name: string;
  readonly image: string;
  readonly imageID: string;
  readonly containerID?: string;
  readonly ready: boolean;
  readonly started: boolean;
  readonly restartCount: number;
  readonly state: ContainerState;
  readonly lastState: ContainerState | Record<string, never>;
}

export interface PodStatus {
  readonly phase?: string;
  readonly conditions?: readonly PodCondition[];
  readonly podIP?: string;
  readonly podIPs?: readonly { ip: string }[];
  readonly hostIP?: string;
  readonly hostIPs?: readonly { ip: string }[];
  readonly startTime?: string;
  readonly containerStatuses?: readonly ContainerStatus[];
  readonly initContainerStatuses?: readonly ContainerStatus[];
  readonly qosClass?: string;
  readonly message?: string;
  readonly reason?: string;
}

export interface Pod extends KubeObject {
  readonly spec: PodSpec;
  readonly status?: PodStatus;
}

export interface ConfigMap extends KubeObject {
  readonly data?: Record<string, string>;
  readonly binaryData?: Record<string, string>;
}

export interface Secret extends KubeObject {
  /** base64 */
  readonly data?: Record<string, string>;
}
