/**
 * A stand-in for CoreDNS (registry.k8s.io/coredns/coredns, the Gateway API conformance suite's
 * UDP backend) while hack/build-peers.sh does not build CoreDNS: answers every A query with the
 * client's address (like the `whoami` plugin), other queries with no records, on UDP port 53
 * (or `-dns.port`). It never forwards: the Corefile's `forward` lines are not honoured, so no
 * query leaves the node. Started by the kubelet inside the pod's network namespace.
 */
import { createSocket } from "node:dgram";
import { buildAnswer, parseQuery } from "./dns-wire";

const argv = process.argv.slice(2);
const portFlag = argv.indexOf("-dns.port");
const port = portFlag >= 0 ? Number(argv[portFlag + 1]) : 53;

const sock = createSocket("udp4");
sock.on("message", (msg, rinfo) => {
  const q = parseQuery(msg);
  if (!q) return;
  process.stdout.write(
    `[INFO] ${rinfo.address}:${rinfo.port} - ${q.id} "A IN ${q.name} udp ${msg.length}"\n`,
  );
  sock.send(buildAnswer(q, rinfo.address), rinfo.port, rinfo.address);
});
sock.on("listening", () => {
  process.stdout.write(
    `.:${port} (kengine-local stand-in for CoreDNS: whoami answers, no forwarding)\n`,
  );
});
sock.bind(port);
process.on("SIGTERM", () => sock.close(() => process.exit(0)));
