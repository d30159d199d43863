import { containerEnv, expandRefs, fieldValue, referencedObjects } from "./env";
import type { ConfigMap, Pod, Secret } from "./types";

const pod: Pod = {
  metadata: { name: "p1", namespace: "ns1", uid: "u-1", labels: { app: "echo" } },
  spec: {
    nodeName: "kengine-local",
    serviceAccountName: "sa",
    containers: [
      {
        name: "c",
        env: [
          { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
          { name: "NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
          { name: "IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } },
          { name: "NODE", valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } } },
          { name: "URL", value: "http://$(IP):3000/$$(IP)" },
          { name: "CM", valueFrom: { configMapKeyRef: { name: "cm", key: "k" } } },
          { name: "SEC", valueFrom: { secretKeyRef: { name: "s", key: "pw" } } },
        ],
        envFrom: [{ configMapRef: { name: "cm" }, prefix: "X_" }],
      },
    ],
  },
};
const cm: ConfigMap = { metadata: { name: "cm" }, data: { k: "v" } };
const secret: Secret = {
  metadata: { name: "s" },
  data: { pw: Buffer.from("hunter2").toString("base64") },
};
const sources = {
  configMaps: new Map([["cm", cm]]),
  secrets: new Map([["s", secret]]),
  podIP: "10.244.0.7",
  hostIP: "10.244.0.1",
};

describe("containerEnv", () => {
  it("resolves values, downward-API fields, references and envFrom", () => {
    expect(containerEnv(pod, pod.spec.containers[0], sources)).toEqual({
      ok: true,
      env: {
        X_k: "v",
        POD_NAME: "p1",
        NAMESPACE: "ns1",
        IP: "10.244.0.7",
        NODE: "kengine-local",
        URL: "http://10.244.0.7:3000/$(IP)",
        CM: "v",
        SEC: "hunter2",
      },
    });
  });

  it("fails on a missing non-optional key and skips an optional one", () => {
    const c = (optional: boolean) => ({
      name: "c",
      env: [{ name: "A", valueFrom: { configMapKeyRef: { name: "cm", key: "nope", optional } } }],
    });
    const bad = containerEnv(pod, c(false), sources);
    expect(bad.ok).toBe(false);
    expect(containerEnv(pod, c(true), sources)).toEqual({ ok: true, env: {} });
  });
});

describe("fieldValue", () => {
  it("reads labels and refuses unknown paths", () => {
    expect(fieldValue(pod, "metadata.labels['app']", "", "")).toBe("echo");
    expect(fieldValue(pod, "spec.serviceAccountName", "", "")).toBe("sa");
    expect(fieldValue(pod, "status.hostIP", "", "10.244.0.1")).toBe("10.244.0.1");
    expect(fieldValue(pod, "metadata.generation", "", "")).toBeUndefined();
  });
});

describe("expandRefs", () => {
  it("leaves unknown references alone", () => {
    expect(expandRefs("$(A)-$(B)", { A: "1" })).toBe("1-$(B)");
  });
});

describe("referencedObjects", () => {
  it("collects env and volume references", () => {
    const p: Pod = {
      ...pod,
      spec: {
        ...pod.spec,
        volumes: [
          { name: "v", secret: { secretName: "tls" } },
          { name: "p", projected: { sources: [{ configMap: { name: "kube-root-ca.crt" } }] } },
        ],
      },
    };
    const r = referencedObjects(p);
    expect([...r.configMaps].sort()).toEqual(["cm", "kube-root-ca.crt"]);
    expect([...r.secrets].sort()).toEqual(["s", "tls"]);
  });
});
