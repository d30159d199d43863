/**
 * `npm run templates`: bring-your-own proxy manifests (hack/proxy-templates.ts).
 *
 *   npm run templates
 *       regenerates the committed examples in deploy/proxy/ (Gateway `edge` in namespace `edge`,
 *       the admin CA left as a placeholder a proxy refuses to start with)
 *   npm run templates -- --gateway edge --namespace apps --out my-proxies/ \
 *       [--daemonset] [--replicas 3] [--image REPO:TAG] [--listener 80/HTTP ...] \
 *       (--ca-file ca.crt | --issue)
 *       your own: --ca-file inlines your admin CA (e.g. the one cert-manager issued, see
 *       deploy/proxy/README.md); --issue creates a CA, the proxies' serving certificate and
 *       the controller's client certificate with the controller's own PKI code and writes
 *       them as Secrets to certificates.yaml in --out (private keys: keep that file secret).
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  CA_LIFETIME_DAYS,
  CLOCK_SKEW_MS,
  LEAF_LIFETIME_DAYS,
  createAuthority,
  generateKeyPair,
  issueClientCertificate,
  issueServerCertificate,
  proxyServerNames,
} from "../capabilities/pki/pki";
import { byoNames, exampleFiles, headerFor, proxyTemplates, yamlDocs } from "./proxy-templates";

const root = join(__dirname, "..");

function fail(message: string): never {
  console.error(`npm run templates: ${message}`);
  process.exit(1);
}

function issueAll(gateway: string, namespace: string, now = new Date()) {
  const n = byoNames(gateway);
  const notBefore = new Date(now.getTime() - CLOCK_SKEW_MS);
  const ca = createAuthority({
    commonName: `${gateway} kengine admin CA`.slice(0, 64),
    keys: generateKeyPair(),
    notBefore,
    lifetimeDays: CA_LIFETIME_DAYS,
  });
  if (!ca.ok) fail(ca.error);
  const serving = issueServerCertificate(ca.value, {
    commonName: `${n.admin}.${namespace}.svc`.slice(0, 64),
    dnsNames: proxyServerNames(n.admin, namespace),
    keys: generateKeyPair(),
    notBefore,
    lifetimeDays: LEAF_LIFETIME_DAYS,
  });
  const client = issueClientCertificate(ca.value, {
    commonName: "kengine-gateway controller",
    keys: generateKeyPair(),
    notBefore,
    lifetimeDays: LEAF_LIFETIME_DAYS,
  });
  if (!serving.ok) fail(serving.error);
  if (!client.ok) fail(client.error);
  const secret = (name: string, cert: string, key: string) => ({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace },
    type: "kubernetes.io/tls",
    stringData: { "tls.crt": cert, "tls.key": key, "ca.crt": ca.value.certificatePem },
  });
  return {
    caPem: ca.value.certificatePem,
    secrets: [
      secret(n.servingSecret, serving.value.certificatePem, serving.value.privateKey.reveal()),
      secret(n.clientSecret, client.value.certificatePem, client.value.privateKey.reveal()),
    ],
  };
}

function parseListener(s: string) {
  const m = /^(\d{1,5})\/(HTTP|HTTPS|TLS|TCP|UDP)$/.exec(s);
  if (!m) fail(`--listener ${s}: expected PORT/PROTOCOL, e.g. 80/HTTP or 53/UDP`);
  return { port: Number(m[1]), protocol: m[2]! };
}

function main(): void {
  const { values } = parseArgs({
    options: {
      gateway: { type: "string" },
      namespace: { type: "string" },
      out: { type: "string" },
      daemonset: { type: "boolean", default: false },
      replicas: { type: "string" },
      image: { type: "string" },
      listener: { type: "string", multiple: true },
      "ca-file": { type: "string" },
      issue: { type: "boolean", default: false },
    },
  });
  if (!values.gateway) {
    const dir = join(root, "deploy", "proxy");
    const files = exampleFiles();
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    console.log(
      `wrote ${Object.keys(files)
        .map(f => join("deploy", "proxy", f))
        .join(", ")}`,
    );
    return;
  }

  const namespace = values.namespace ?? fail("--namespace is required with --gateway");
  const out = values.out ?? fail("--out DIR is required with --gateway");
  if (!!values["ca-file"] === values.issue) fail("give exactly one of --ca-file FILE and --issue");
  const replicas = values.replicas === undefined ? undefined : Number(values.replicas);
  if (replicas !== undefined && !(Number.isInteger(replicas) && replicas >= 1))
    fail(`--replicas ${values.replicas}: expected a whole number ≥ 1`);
  const issued = values.issue ? issueAll(values.gateway, namespace) : undefined;
  const caPem = issued?.caPem ?? readFileSync(values["ca-file"]!, "utf8");
  const listeners = (values.listener ?? ["80/HTTP"]).map(parseListener);
  let objects: unknown[];
  try {
    objects = proxyTemplates({
      gateway: values.gateway,
      namespace,
      kind: values.daemonset ? "DaemonSet" : "Deployment",
      replicas,
      image: values.image,
      listeners,
      caPem,
    });
  } catch (e) {
    fail(e instanceof Error ? e.message : String(e));
  }
  mkdirSync(out, { recursive: true });
  writeFileSync(
    join(out, "proxies.yaml"),
    yamlDocs(
      headerFor(`Bring-your-own proxies for Gateway ${namespace}/${values.gateway}.`),
      objects,
    ),
  );
  if (issued) {
    writeFileSync(
      join(out, "certificates.yaml"),
      yamlDocs(
        headerFor("Admin channel certificates (PRIVATE KEYS: do not commit)."),
        issued.secrets,
      ),
      { mode: 0o600 },
    );
  }
  console.log(
    `wrote ${join(out, "proxies.yaml")}${issued ? ` and ${join(out, "certificates.yaml")}` : ""}`,
  );
}

main();
