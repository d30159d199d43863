/**
 * A real Caddy run as the controller runs a proxy: its management listener on mTLS (server
 * certificate from files, client certificates of one CA), bootstrapped the way a managed pod
 * starts, and an `AdminClient` holding the controller's client certificate.
 *
 *   const proxy = await startManagedCaddy("my-test");
 *   proxy.client.load(proxy.endpoint, bytes);
 *   await proxy.stop();
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AdminClient, ProxyEndpoint } from "../../capabilities/proxies";
import { bootstrapConfig, ManagementSpec } from "../../capabilities/caddy";
import {
  createAuthority,
  generateKeyPair,
  issueClientCertificate,
  issueServerCertificate,
  proxyServerName,
  proxyServerNames,
} from "../../capabilities/pki/pki";
import { Caddy, startCaddy } from "./caddy";
import { freePort } from "./ports";

export interface ManagedCaddy {
  readonly caddy: Caddy;
  readonly spec: ManagementSpec;
  readonly client: AdminClient;
  readonly endpoint: ProxyEndpoint;
  /** The controller's client credentials (for a second client). */
  readonly credentials: ConstructorParameters<typeof AdminClient>[0];
  stop(): Promise<void>;
}

const must = <T>(r: { ok: true; value: T } | { ok: false; error: unknown }): T => {
  if (!r.ok) throw new Error(`unexpected failure: ${JSON.stringify(r.error)}`);
  return r.value;
};

/** Starts the Caddy, loads its bootstrap (management listener on a free port) and returns. */
export async function startManagedCaddy(
  name: string,
  service = "proxy",
  namespace = "default",
): Promise<ManagedCaddy> {
  const dir = mkdtempSync(join(tmpdir(), `kg-${name}-`));
  const notBefore = new Date(Date.now() - 5 * 60_000);
  const ca = must(
    createAuthority({
      commonName: `${name} CA`,
      keys: generateKeyPair(),
      notBefore,
      lifetimeDays: 30,
    }),
  );
  const serving = must(
    issueServerCertificate(ca, {
      commonName: `${service}.${namespace}`,
      dnsNames: proxyServerNames(service, namespace),
      keys: generateKeyPair(),
      notBefore,
      lifetimeDays: 7,
    }),
  );
  const controller = must(
    issueClientCertificate(ca, {
      commonName: "kengine-gateway-controller",
      keys: generateKeyPair(),
      notBefore,
      lifetimeDays: 7,
    }),
  );
  writeFileSync(join(dir, "tls.crt"), serving.certificatePem);
  writeFileSync(join(dir, "tls.key"), serving.privateKey.reveal(), { mode: 0o600 });
  const caddy = await startCaddy({ name });
  const mgmt = await freePort("127.0.0.1");
  const spec: ManagementSpec = {
    listenAddress: `127.0.0.1:${mgmt}`,
    adminAddress: caddy.adminAddress,
    serverCertTag: "kengine-management",
    clientCaPem: ca.certificatePem,
    serverCertificate: {
      kind: "files",
      certificateFile: join(dir, "tls.crt"),
      keyFile: join(dir, "tls.key"),
    },
    readinessAddress: `127.0.0.1:${await freePort("127.0.0.1")}`,
  };
  const loaded = await caddy.load(must(bootstrapConfig(spec)));
  if (loaded.status !== 200) throw new Error(`bootstrap refused: ${loaded.text}`);
  const credentials = {
    caPem: ca.certificatePem,
    certificatePem: controller.certificatePem,
    privateKey: controller.privateKey,
  };
  const client = new AdminClient(credentials);
  const endpoint: ProxyEndpoint = {
    name: `${namespace}/${service}-0`,
    address: "127.0.0.1",
    port: mgmt,
    serverName: proxyServerName(`${service}-0`, service, namespace),
  };
  return {
    caddy,
    spec,
    client,
    endpoint,
    credentials,
    async stop() {
      await client.close();
      await caddy.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
