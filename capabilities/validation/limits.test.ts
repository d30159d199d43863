import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import {
  DEFAULT_LIMITS,
  DURATION_PATTERN,
  MAX_EXTERNAL_AUTH_BODY_BYTES,
  durationMs,
  limitsProblems,
  resolveLimits,
} from "./limits";
import { kengineParametersProblems } from "./parameters";
import { gatewayOverrideProblems } from "./overrides";
import { externalAuthLimitProblems, listenerFilterProblems } from "./listenerfilters";
import { toCaddyConfig } from "../caddy";
import { GatewayIR } from "../ir";
import { ProxyFlavor } from "../flavor/proxy-flavor";

const crdLimits = () =>
  parse(
    readFileSync(
      join(__dirname, "../../deploy/crds/gateway.kengine.io_kengineparameters.yaml"),
      "utf8",
    ),
  ).spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.limits.properties;

describe("spec.limits", () => {
  it("accepts the documented defaults and the bounds", () => {
    expect(limitsProblems(DEFAULT_LIMITS)).toEqual([]);
    expect(
      kengineParametersProblems({
        spec: {
          limits: {
            externalAuthMaxBodyBytes: MAX_EXTERNAL_AUTH_BODY_BYTES,
            requestHeaderTimeout: "1s",
            requestBodyTimeout: "1m30s",
            idleTimeout: "24h",
          },
        },
      }),
    ).toEqual([]);
  });

  it("names the field, the value and the bound of each bad limit", () => {
    expect(
      limitsProblems({
        externalAuthMaxBodyBytes: MAX_EXTERNAL_AUTH_BODY_BYTES + 1,
        requestHeaderTimeout: "10",
        requestBodyTimeout: "500ms",
        idleTimeout: "25h",
        bodyLimit: 1,
      }),
    ).toEqual([
      {
        path: "spec.limits.bodyLimit",
        value: "",
        message: expect.stringMatching(/^is not a limit/),
      },
      {
        path: "spec.limits.externalAuthMaxBodyBytes",
        value: "16777217",
        message: "must be a whole number of bytes from 0 to 16777216 (16 MiB)",
      },
      {
        path: "spec.limits.requestHeaderTimeout",
        value: "10",
        message: 'is not a duration: a number with a unit (ms, s, m, h), e.g. "10s" or "1m30s"',
      },
      { path: "spec.limits.requestBodyTimeout", value: "500ms", message: "must be from 1s to 24h" },
      { path: "spec.limits.idleTimeout", value: "25h", message: "must be from 1s to 24h" },
    ]);
    expect(limitsProblems("10s")).toHaveLength(1);
  });

  it("reads Go durations", () => {
    expect(durationMs("1m30s")).toBe(90_000);
    expect(durationMs("1.5h")).toBe(5_400_000);
    expect(durationMs("250ms")).toBe(250);
    for (const bad of ["", "10", "-1s", "1d", "1 s", 10, undefined])
      expect(durationMs(bad)).toBeUndefined();
  });

  it("defaults each missing or malformed field on its own", () => {
    expect(resolveLimits(undefined)).toEqual(DEFAULT_LIMITS);
    expect(resolveLimits({ idleTimeout: "90s", requestHeaderTimeout: "x" })).toEqual({
      ...DEFAULT_LIMITS,
      idleTimeout: "90s",
    });
  });

  it("keeps the CRD's bounds and pattern equal to the rules", () => {
    const crd = crdLimits();
    expect(crd.externalAuthMaxBodyBytes.maximum).toBe(MAX_EXTERNAL_AUTH_BODY_BYTES);
    for (const k of ["requestHeaderTimeout", "requestBodyTimeout", "idleTimeout"])
      expect(crd[k].pattern).toBe(DURATION_PATTERN);
    for (const [k, v] of Object.entries(DEFAULT_LIMITS))
      expect(crd[k].description).toContain(`Default ${String(v)}.`);
  });

  it("is refused in a Gateway's own parameters, whatever the class allows", () => {
    expect(
      gatewayOverrideProblems(
        { limits: { idleTimeout: "1h" } },
        { allowGatewayOverrides: ["image", "command", "nodeSelector", "tolerations", "affinity"] },
      ),
    ).toEqual([
      {
        path: "spec.limits",
        value: '{"idleTimeout":"1h"}',
        message:
          "has effect only in the parameters a GatewayClass references; a Gateway's own parameters cannot change the class's limits",
      },
    ]);
  });
});

describe("ExternalAuth forwardBody.maxSize", () => {
  const listener = (maxSize: number) => ({
    name: "l",
    port: 80,
    protocol: "HTTP",
    filters: {
      requests: [
        {
          type: "ExternalAuth",
          externalAuth: { protocol: "HTTP", forwardBody: { maxSize } },
        },
      ],
    },
  });

  it("is refused above 16 MiB without any look-up", () => {
    expect(
      listenerFilterProblems(
        "spec.listeners[0]",
        "HTTP",
        listener(MAX_EXTERNAL_AUTH_BODY_BYTES + 1).filters,
      ),
    ).toEqual([
      {
        path: "spec.listeners[0].filters.requests[0].externalAuth.forwardBody.maxSize",
        value: "16777217",
        message:
          "is above 16777216 bytes (16 MiB), the most the proxy reads into memory for an authorization request",
      },
    ]);
    expect(
      listenerFilterProblems(
        "spec.listeners[0]",
        "HTTP",
        listener(MAX_EXTERNAL_AUTH_BODY_BYTES).filters,
      ),
    ).toEqual([]);
  });

  it("is refused above the class's limit, naming field, value and limit", () => {
    expect(externalAuthLimitProblems([listener(65536), listener(65537)], 65536)).toEqual([
      {
        path: "spec.listeners[1].filters.requests[0].externalAuth.forwardBody.maxSize",
        value: "65537",
        message:
          "is above 65536 bytes, the limit of the GatewayClass's parameters (KengineParameters spec.limits.externalAuthMaxBodyBytes)",
      },
    ]);
    // Above 16 MiB is listenerFilterProblems' problem: not reported twice.
    expect(externalAuthLimitProblems([listener(MAX_EXTERNAL_AUTH_BODY_BYTES + 1)], 1024)).toEqual(
      [],
    );
  });
});

describe("server timeouts in the Caddy config", () => {
  const ir = (flavor: ProxyFlavor, limits?: GatewayIR["limits"]): GatewayIR => ({
    namespace: "default",
    name: "gw",
    gatewayClassName: "kengine",
    ...(flavor !== "Bundled" && { flavor }),
    ...(limits && { limits }),
    httpServers: [{ port: 80, protocol: "HTTP", listeners: [] }],
    l4Servers: [],
    certificates: [],
  });
  const server = (g: GatewayIR) =>
    (toCaddyConfig(g).apps as { http: { servers: Record<string, Record<string, unknown>> } }).http
      .servers["http-80"]!;

  it("renders the defaults on every flavour; the body stall bound only where the proxy has it", () => {
    expect(server(ir("Bundled"))).toMatchObject({
      read_header_timeout: "10s",
      read_idle_timeout: "60s",
      idle_timeout: "5m",
    });
    for (const flavor of ["Caddy", "Kengine"] as const) {
      const s = server(ir(flavor));
      expect(s).toMatchObject({ read_header_timeout: "10s", idle_timeout: "5m" });
      expect(s).not.toHaveProperty("read_idle_timeout");
    }
    // read_timeout (one deadline on the whole request read) is never set.
    expect(server(ir("Bundled"))).not.toHaveProperty("read_timeout");
  });

  it("leaves the management server as the fleet gave it", () => {
    const mgmt = { listen: [":9443"], routes: [] };
    const servers = (
      toCaddyConfig(ir("Bundled"), { management: { server: mgmt } }).apps as {
        http: { servers: Record<string, unknown> };
      }
    ).http.servers;
    expect(servers["kengine-management"]).toEqual(mgmt);
  });

  it("renders the class's limits", () => {
    const limits = { requestHeaderTimeout: "5s", requestBodyTimeout: "2m", idleTimeout: "90s" };
    expect(server(ir("Bundled", limits))).toMatchObject({
      read_header_timeout: "5s",
      read_idle_timeout: "2m",
      idle_timeout: "90s",
    });
  });
});
