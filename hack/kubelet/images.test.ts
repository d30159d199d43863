import { repositoryOf, resolveContainer } from "./images";

describe("repositoryOf", () => {
  it.each([
    ["caddy:2.11", "caddy"],
    ["caddy", "caddy"],
    [
      "registry.k8s.io/gateway-api/echo-basic:v20251204-v1.4.1",
      "registry.k8s.io/gateway-api/echo-basic",
    ],
    ["localhost:5000/caddy", "localhost:5000/caddy"],
    ["localhost:5000/caddy:2@sha256:abc", "localhost:5000/caddy"],
    ["ghcr.io/kengine/kengine@sha256:0123", "ghcr.io/kengine/kengine"],
  ])("%s → %s", (image, repo) => expect(repositoryOf(image)).toBe(repo));
});

describe("resolveContainer", () => {
  it.each([
    "registry.k8s.io/gateway-api/echo-basic:v1",
    "registry.k8s.io/gateway-api/conformance/echo-basic:v0.2.0",
    "gcr.io/k8s-staging-gateway-api/echo-basic:v20240412-v1.0.0-394-g40c666fd",
    "gcr.io/k8s-staging-gateway-api/echo-advanced:v1",
  ])("maps %s to echo-basic", image => {
    expect(resolveContainer({ image })).toEqual({ ok: true, binary: "echo-basic", args: [] });
  });

  it("maps the Ingress conformance suite's echo server (tag and digest) to ingress-echo", () => {
    const image =
      "k8s.gcr.io/ingressconformance/echoserver:v0.0.1@sha256:9b34b17f391f87fb2155f01da2f2f90b7a4a5c1110ed84cb5379faa4f570dc52";
    expect(resolveContainer({ image })).toEqual({ ok: true, binary: "ingress-echo", args: [] });
  });

  it.each([
    "caddy:2.11",
    "docker.io/library/caddy:2",
    "ghcr.io/kengine/kengine:v1",
    "example.com/x/kengine",
  ])("maps %s to caddy with the image's default arguments", image => {
    const r = resolveContainer({ image });
    expect(r).toEqual({
      ok: true,
      binary: "caddy",
      args: ["run", "--config", "/etc/caddy/Caddyfile", "--adapter", "caddyfile"],
    });
  });

  it("args replace the default arguments; command names the binary", () => {
    expect(resolveContainer({ image: "caddy:2", args: ["run", "--config", "/x.json"] })).toEqual({
      ok: true,
      binary: "caddy",
      args: ["run", "--config", "/x.json"],
    });
    expect(
      resolveContainer({ image: "caddy:2", command: ["/usr/bin/caddy", "run"], args: ["--watch"] }),
    ).toEqual({ ok: true, binary: "caddy", args: ["run", "--watch"] });
    expect(
      resolveContainer({ image: "ghcr.io/kengine/kengine:1", command: ["kengine", "version"] }),
    ).toEqual({
      ok: true,
      binary: "caddy",
      args: ["version"],
    });
  });

  it("refuses unknown images with ErrImagePull and names the image", () => {
    const r = resolveContainer({ image: "nginx:1.27" });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.reason).toBe("ErrImagePull");
      expect(r.message).toContain('"nginx:1.27"');
    }
    // Not fooled by a repository that merely contains a known name.
    expect(resolveContainer({ image: "example.com/caddy-ui:1" }).ok).toBe(false);
    expect(resolveContainer({ image: "registry.k8s.io/gateway-api/echo-basic-fork:1" }).ok).toBe(
      false,
    );
  });

  it("refuses a command the local image cannot run", () => {
    const r = resolveContainer({ image: "caddy:2", command: ["/bin/sh", "-c", "true"] });
    expect(r).toMatchObject({ ok: false, reason: "CreateContainerError" });
  });
});

describe("stand-ins", () => {
  it("maps CoreDNS to its binary, with the TypeScript stand-in as fallback", () => {
    expect(
      resolveContainer({
        image: "registry.k8s.io/coredns/coredns:v1.12.2",
        args: ["-conf", "/root/Corefile"],
      }),
    ).toEqual({ ok: true, binary: "coredns", args: ["-conf", "/root/Corefile"], standIn: "dns" });
    expect(resolveContainer({ image: "caddy:2" })).not.toHaveProperty("standIn");
  });
});
