import { kubectl, kubectlOk } from "../support/kube";

describe("local control plane", () => {
  it("serves the Gateway API kinds", () => {
    const out = kubectlOk(["api-resources", "--api-group=gateway.networking.k8s.io", "-o", "name"]);
    for (const r of [
      "gatewayclasses",
      "gateways",
      "httproutes",
      "grpcroutes",
      "tlsroutes",
      "referencegrants",
    ]) {
      expect(out).toContain(`${r}.gateway.networking.k8s.io`);
    }
  });

  it("runs controllers: a namespace gets its default ServiceAccount", async () => {
    const ns = `cp-${Date.now()}`;
    kubectlOk(["create", "namespace", ns]);
    try {
      let found = false;
      for (let i = 0; i < 60 && !found; i++) {
        found = kubectl(["get", "serviceaccount", "default", "-n", ns]).code === 0;
        if (!found) await new Promise(r => setTimeout(r, 500));
      }
      expect(found).toBe(true);
    } finally {
      kubectl(["delete", "namespace", ns, "--wait=false"]);
    }
  });
});
