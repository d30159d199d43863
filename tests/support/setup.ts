// Integration tests: generous timeouts, and every client (kubectl, kubernetes-fluent-client)
// talks to the local cluster.
import { kubeconfigPath } from "./paths";

jest.setTimeout(240_000);
process.env.KUBECONFIG = kubeconfigPath;
