/**
 * The ingress-nginx annotation table at admission: warnings by support level, refusals with
 * field paths, nothing read without the class's opt-in, and docs/ingress.md listing every
 * annotation with the table's support level.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ingressAnnotationProblems, ingressAnnotationWarnings, ingressProblems } from "./ingress";
import { NGINX_ANNOTATIONS, readNginxAnnotations } from "./nginx-annotations";

const P = "nginx.ingress.kubernetes.io/";
const at = (name: string) => `metadata.annotations[${JSON.stringify(P + name)}]`;
const withAnnotations = (annotations: Record<string, string>) => ({
  metadata: { annotations },
  spec: {},
});

describe("ingress-nginx annotations at admission", () => {
  it("without the opt-in every one is ignored with a warning, none refused", () => {
    const i = withAnnotations({
      [`${P}rewrite-target`]: "/",
      [`${P}server-snippet`]: "x",
      "traefik.ingress.kubernetes.io/router.priority": "1",
    });
    expect(ingressAnnotationWarnings(i)).toEqual([
      expect.stringMatching(/rewrite-target.*ignored/),
      expect.stringMatching(/server-snippet.*ignored/),
      expect.stringMatching(/traefik.*ignored/),
    ]);
    expect(ingressAnnotationProblems(i, false)).toEqual([]);
  });

  it("use-regex: regex paths pass the path rules as RE2 only where the class reads it", () => {
    const i = {
      metadata: { annotations: { [`${P}use-regex`]: "true" } },
      spec: {
        rules: [
          {
            http: {
              paths: [
                {
                  path: "/items/[0-9]+",
                  pathType: "Prefix",
                  backend: { service: { name: "a", port: { number: 1 } } },
                },
                {
                  path: "/(?=x)",
                  pathType: "ImplementationSpecific",
                  backend: { service: { name: "a", port: { number: 1 } } },
                },
              ],
            },
          },
        ],
      },
    };
    // the single-object rules read both as RE2: the lookahead is refused
    expect(ingressProblems(i).map(p => p.path)).toEqual(["spec.rules[0].http.paths[1].path"]);
    // a class that does not read it matches them literally: the first is refused too
    expect(ingressAnnotationProblems(i, false).map(p => p.path)).toEqual([
      "spec.rules[0].http.paths[0].path",
    ]);
    expect(ingressAnnotationProblems(i, true)).toEqual([]);
  });

  it("with the opt-in: supported ones are silent, partial ones say what is missing", () => {
    const i = withAnnotations({
      [`${P}ssl-redirect`]: "true",
      [`${P}permanent-redirect`]: "https://example.org/",
      [`${P}app-root`]: "/app",
      [`${P}upstream-vhost`]: "a.example.org",
      [`${P}rewrite-target`]: "/",
      [`${P}proxy-read-timeout`]: "30",
      [`${P}force-ssl-redirect`]: "true",
      [`${P}backend-protocol`]: "GRPC",
      "traefik.ingress.kubernetes.io/router.priority": "1",
    });
    const warnings = ingressAnnotationWarnings(i, true);
    expect(warnings).toEqual([
      expect.stringContaining(`${at("force-ssl-redirect")}: partly supported`),
      expect.stringContaining(`${at("rewrite-target")}: partly supported`),
      expect.stringContaining(`${at("proxy-read-timeout")}: partly supported`),
      expect.stringMatching(/backend-protocol.*"GRPC" is not read.*kubernetes\.io\/h2c/),
      expect.stringMatching(/traefik.*ignored/),
    ]);
    expect(ingressAnnotationProblems(i, true)).toEqual([]);
    expect(
      ingressAnnotationWarnings(withAnnotations({ [`${P}backend-protocol`]: "http" }), true),
    ).toEqual([]);
  });

  it("not yet supported and unknown ones are ignored with a warning", () => {
    const warnings = ingressAnnotationWarnings(
      withAnnotations({
        [`${P}proxy-read-timeout-x`]: "8m",
        [`${P}session-cookie-conditional-samesite-none`]: "true",
        [`${P}made-up`]: "1",
      }),
      true,
    );
    expect(warnings).toEqual([
      `${at("made-up")}: not implemented by the Kengine ingress controller and ignored`,
      `${at("proxy-read-timeout-x")}: not implemented by the Kengine ingress controller and ignored`,
      `${at("session-cookie-conditional-samesite-none")}: not supported yet and ignored (${NGINX_ANNOTATIONS["session-cookie-conditional-samesite-none"]!.becomes})`,
      `${at("session-cookie-conditional-samesite-none")}: ignored without ${P}affinity: "cookie"`,
    ]);
  });

  it("refuses snippets and bad values with the field path and the reason", () => {
    const problems = ingressAnnotationProblems(
      withAnnotations({
        [`${P}configuration-snippet`]: "more_set_headers x;",
        [`${P}server-snippet`]: "location / {}",
        [`${P}auth-snippet`]: "x",
        [`${P}rewrite-target`]: "/$1",
        [`${P}temporal-redirect`]: "ftp://example.org/",
      }),
      true,
    );
    expect(problems.map(p => [p.path, p.message])).toEqual([
      [at("auth-snippet"), expect.stringMatching(/refused: the proxy runs no nginx configuration/)],
      [at("configuration-snippet"), expect.stringMatching(/refused/)],
      [at("server-snippet"), expect.stringMatching(/refused/)],
      [at("temporal-redirect"), "must be an http or https URL"],
      [at("rewrite-target"), expect.stringMatching(/capture groups are not supported/)],
    ]);
  });

  it("reads Go booleans as ingress-nginx does, and never throws on odd shapes", () => {
    expect(readNginxAnnotations({ [`${P}ssl-redirect`]: "0" }).effects.sslRedirect).toBe(false);
    expect(readNginxAnnotations({ [`${P}ssl-redirect`]: "True" }).effects.sslRedirect).toBe(true);
    for (const odd of [null, 1, "x", [], { [`${P}app-root`]: 5 }, { [`${P}ssl-redirect`]: null }])
      expect(() => readNginxAnnotations(odd)).not.toThrow();
  });

  it("docs/ingress.md lists every annotation of the table with its support level", () => {
    const doc = readFileSync(join(__dirname, "../../docs/ingress.md"), "utf8");
    for (const [name, entry] of Object.entries(NGINX_ANNOTATIONS))
      expect(doc).toMatch(new RegExp(`\\| \`${name}\` +\\| ${entry.support} +\\|`));
  });
});
