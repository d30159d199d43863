/**
 * auth-url and auth-response-headers as read for an Ingress whose class opts in: the Service
 * named by its cluster DNS name, everything else refused with the annotation's field path
 * (never ignored: the Ingress would be served unauthenticated).
 */
import { authService } from "./nginx-auth";
import { annotationPath, readNginxAnnotations } from "./nginx-annotations";

const read = (a: Record<string, string>, ns = "team") =>
  readNginxAnnotations(
    Object.fromEntries(Object.entries(a).map(([k, v]) => [`nginx.ingress.kubernetes.io/${k}`, v])),
    ns,
  );

describe("auth-url", () => {
  it.each([
    ["http://oauth2-proxy.auth.svc.cluster.local:4180/oauth2/auth", "auth", "oauth2-proxy", 4180],
    ["http://oauth2-proxy.auth.svc:4180/oauth2/auth", "auth", "oauth2-proxy", 4180],
    ["http://oauth2-proxy.auth/oauth2/auth", "auth", "oauth2-proxy", 80],
    ["http://verifier:9000/", "team", "verifier", 9000],
  ])("%s names Service %s/%s port %d", (url, namespace, name, port) => {
    expect(authService(url, "team")).toMatchObject({ namespace, name, port });
  });

  it("asks the URL's path and query exactly, with its host, and grants the listed headers", () => {
    const r = read({
      "auth-url": "http://auth.infra.svc.cluster.local:8080/verify?tenant=a",
      "auth-response-headers": "X-User, X-Email,X-User",
    });
    expect(r.problems).toEqual([]);
    expect(r.effects.auth).toEqual({
      service: { namespace: "infra", name: "auth", port: 8080 },
      path: "/verify?tenant=a",
      host: "auth.infra.svc.cluster.local:8080",
      responseHeaders: ["X-User", "X-Email"],
    });
    expect(r.warnings.join("\n")).toContain(`${annotationPath("auth-url")}: partly supported`);
  });

  it.each([
    ["https://$host/oauth2/auth", "nginx variables"],
    ["https://auth.infra.svc/verify", "must be an http URL"],
    ["http://203.0.113.9/verify", "must name a Service"],
    ["http://auth.example.com/verify", "must name a Service"],
    ["http://a.b.c.d/verify", "must name a Service"],
    ["http://user:pw@auth.infra/verify", "user, password"],
    ["http://auth.infra/verify#x", "fragment"],
    ["http://auth.infra:0/verify", "port"],
    ["not a url", "absolute http URL"],
    ["http://auth.infra/verify?q={http.request.host}", "nginx variables"],
  ])("refuses %s", (url, message) => {
    const r = read({ "auth-url": url });
    expect(r.effects.auth).toBeUndefined();
    expect(r.problems).toContainEqual(
      expect.objectContaining({
        path: annotationPath("auth-url"),
        message: expect.stringContaining(message),
      }),
    );
  });

  it("refuses a response header the answer may not set, and warns about one without auth-url", () => {
    const r = read({ "auth-url": "http://auth/v", "auth-response-headers": "X-User,Host,a b" });
    expect(r.problems.map(p => p.path)).toEqual([
      annotationPath("auth-response-headers"),
      annotationPath("auth-response-headers"),
    ]);
    expect(read({ "auth-response-headers": "X-User" }).warnings.join("\n")).toContain(
      "ignored without nginx.ingress.kubernetes.io/auth-url",
    );
  });

  it("auth-signin is partial, not refused: the client gets the 401", () => {
    const r = read({ "auth-url": "http://auth/v", "auth-signin": "https://example.com/start" });
    expect(r.problems).toEqual([]);
    expect(r.warnings.join("\n")).toContain(`${annotationPath("auth-signin")}: partly supported`);
  });
});
