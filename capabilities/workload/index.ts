/**
 * A managed proxy as Kubernetes objects: the pod spec around the management channel (pod.ts)
 * and the Deployment, Services, Secrets, ConfigMap, PodDisruptionBudget and NetworkPolicy the
 * provisioner applies (objects.ts), from the settings provision/ resolves.
 */
export * from "./pod";
export * from "./objects";
