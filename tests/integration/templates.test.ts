/**
 * The bring-your-own proxy templates (deploy/proxy/, `npm run templates`) are accepted by the
 * API server: `kubectl apply --dry-run=server` of the committed examples and of a set rendered
 * with a real CA. The cert-manager resources need cert-manager's CRDs, which the local cluster
 * does not have: they are checked only for their kinds.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { kubectl, kubectlOk } from "../support/kube";
import { repoRoot } from "../support/paths";

const dir = join(repoRoot, "deploy", "proxy");
let work: string;
let createdEdge = false;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "kg-templates-"));
  // The CRDs of this tree (KengineParameters mode External), as hack/cluster.sh installs them.
  kubectlOk([
    "apply",
    "--server-side",
    "--force-conflicts",
    "-f",
    join(repoRoot, "deploy", "crds"),
  ]);
  // Namespaced objects need their namespace, even in a dry run.
  if (kubectl(["get", "namespace", "edge"]).code !== 0) {
    kubectlOk(["create", "namespace", "edge"]);
    createdEdge = true;
  }
});

afterAll(() => {
  if (createdEdge) kubectl(["delete", "namespace", "edge", "--wait=false"]);
  rmSync(work, { recursive: true, force: true });
});

const dryRun = (file: string) => {
  const r = kubectl(["apply", "--dry-run=server", "-f", file]);
  return { file, code: r.code, error: r.code === 0 ? "" : r.stderr, out: r.stdout };
};

describe("bring-your-own proxy templates", () => {
  it.each(["deployment.yaml", "daemonset.yaml"])("%s applies with --dry-run=server", name => {
    const r = dryRun(join(dir, name));
    expect({ ...r, out: "" }).toEqual({ file: join(dir, name), code: 0, error: "", out: "" });
    expect(r.out).toMatch(
      /networkpolicy\.networking\.k8s\.io\/edge-proxy created \(server dry run\)/,
    );
    expect(r.out).toMatch(/poddisruptionbudget\.policy\/edge-proxy created \(server dry run\)/);
  });

  it("renders a set with issued certificates that applies with --dry-run=server", () => {
    const out = join(work, "rendered");
    const r = spawnSync(
      "npx",
      [
        "tsx",
        "hack/templates.ts",
        "--gateway",
        "edge",
        "--namespace",
        "edge",
        "--daemonset",
        "--listener",
        "80/HTTP",
        "--listener",
        "5353/UDP",
        "--issue",
        "--out",
        out,
      ],
      { cwd: repoRoot, encoding: "utf8", timeout: 120_000 },
    );
    expect({ code: r.status, stderr: r.status === 0 ? "" : r.stderr }).toEqual({
      code: 0,
      stderr: "",
    });
    for (const f of ["certificates.yaml", "proxies.yaml"]) {
      expect(dryRun(join(out, f))).toMatchObject({ code: 0, error: "" });
    }
    // The bootstrap config trusts the CA the certificates were issued from.
    const docs = parseAllDocuments(readFileSync(join(out, "proxies.yaml"), "utf8")).map(d =>
      d.toJS(),
    );
    const certs = parseAllDocuments(readFileSync(join(out, "certificates.yaml"), "utf8")).map(d =>
      d.toJS(),
    );
    const caPem: string = certs[0].stringData["ca.crt"];
    const der = caPem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, "").replace(/\s+/g, "");
    const boot = JSON.parse(docs.find(d => d.kind === "ConfigMap").data["caddy.json"]);
    expect(
      boot.apps.http.servers["kengine-management"].tls_connection_policies[0].client_authentication
        .ca.trusted_ca_certs,
    ).toEqual([der]);
  });

  it("refuses to render without a CA, naming the missing option", () => {
    const r = spawnSync(
      "npx",
      ["tsx", "hack/templates.ts", "--gateway", "edge", "--namespace", "edge", "--out", work],
      { cwd: repoRoot, encoding: "utf8", timeout: 120_000 },
    );
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/give exactly one of --ca-file FILE and --issue/);
  });

  it("cert-manager.yaml holds Issuers and Certificates only", () => {
    const kinds = parseAllDocuments(readFileSync(join(dir, "cert-manager.yaml"), "utf8")).map(
      d => `${d.get("apiVersion")}/${d.get("kind")}`,
    );
    expect(new Set(kinds)).toEqual(
      new Set(["cert-manager.io/v1/Issuer", "cert-manager.io/v1/Certificate"]),
    );
  });
});
