// Jest runs TypeScript and the ESM-only dependencies of Pepr (kubernetes-fluent-client,
// @kubernetes/client-node and friends) through SWC, so tests need no ESM mode.
const esmDeps = [
  "kubernetes-fluent-client",
  "@kubernetes/client-node",
  "openid-client",
  "oauth4webapi",
  "jose",
  "yaml",
];
const common = {
  testEnvironment: "node",
  transform: {
    "^.+\\.(t|j|mj)s$": [
      "@swc/jest",
      { jsc: { parser: { syntax: "typescript" }, target: "es2022" }, module: { type: "commonjs" } },
    ],
  },
  transformIgnorePatterns: [`/node_modules/(?!(${esmDeps.join("|")})/)`],
  moduleFileExtensions: ["ts", "js", "mjs", "cjs", "json"],
  // The local cluster's state: its etcd writes `*.snap` files, which jest would take for
  // obsolete snapshots and fail the run on.
  modulePathIgnorePatterns: ["<rootDir>/.local/"],
};

module.exports = {
  projects: [
    {
      ...common,
      displayName: "unit",
      testMatch: [
        "<rootDir>/capabilities/**/*.test.ts",
        "<rootDir>/cli/**/*.test.ts",
        "<rootDir>/hack/**/*.test.ts",
      ],
    },
    {
      ...common,
      displayName: "integration",
      // tests/node: the node itself (what its kubelet, runtime, kube-proxy and CoreDNS apply)
      testMatch: [
        "<rootDir>/tests/integration/**/*.test.ts",
        "<rootDir>/tests/e2e/**/*.test.ts",
        "<rootDir>/tests/node/**/*.test.ts",
      ],
      globalSetup: "<rootDir>/tests/support/global-setup.ts",
      globalTeardown: "<rootDir>/tests/support/global-teardown.ts",
      // testTimeout is a global-only option; integration tests set theirs here.
      setupFilesAfterEnv: ["<rootDir>/tests/support/setup.ts"],
    },
  ],
};
