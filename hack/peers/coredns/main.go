// Command coredns (package main of this module) is CoreDNS v1.15.0 (this folder's go.mod) with only the plugins the local
// cluster's Corefiles use: the node's cluster DNS (hack/node/coredns.yaml: errors, health, ready,
// kubernetes, cache, reload) and the Gateway API conformance suite's UDP backend (forward, log,
// errors, whoami), plus loop, loadbalance, hosts and prometheus, which Corefiles commonly carry.
// Upstream's main links every plugin, cloud DNS providers' SDKs among them; this one builds in
// less than half the time. A Corefile naming another plugin fails to start with "unknown
// directive".
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/whoami"
)

func main() {
	coremain.Run()
}
