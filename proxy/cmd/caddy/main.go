// Command caddy is the proxy the local cluster runs for Gateways (the Bundled proxy flavour):
// stock Caddy with its standard modules, the layer-4 app from caddy-l4 (TLS, TCP and UDP
// routes) and our modules in proxy/, one import line each (kengine_mirror: RequestMirror;
// listener: the kengine-http / kengine-tcp networks, sockets kept across reloads; santls: the
// reverse_proxy transport kengine_http, BackendTLSPolicy subjectAltNames and the egress guard
// on destinations a tenant named; extauth: kengine_ext_auth, external authorization before
// routing; deadline: kengine_deadline, a route's request timeout; routetable: the
// kengine_route_table handler, a host-indexed route table changed per host over the admin API;
// validate: the admin route POST /kengine/validate, a config checked without loading it;
// session: the selection policy kengine_session, session persistence by cookie or header).
//
// Only the caddy-l4 packages the controller uses are linked: the module proxy serves a
// caddy-l4 revision (2025-05-30) whose QUIC matcher does not compile against the quic-go
// that current Caddy needs, and we have no use for it.
package main

import (
	"os"
	"runtime/debug"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
	_ "github.com/mholt/caddy-l4/layer4"
	_ "github.com/mholt/caddy-l4/modules/l4echo"
	_ "github.com/mholt/caddy-l4/modules/l4proxy"
	_ "github.com/mholt/caddy-l4/modules/l4proxyprotocol"
	_ "github.com/mholt/caddy-l4/modules/l4subroute"
	_ "github.com/mholt/caddy-l4/modules/l4tls"

	_ "kengine.io/gateway/proxy/deadline"
	_ "kengine.io/gateway/proxy/extauth"
	_ "kengine.io/gateway/proxy/listener"
	_ "kengine.io/gateway/proxy/mirror"
	_ "kengine.io/gateway/proxy/routetable"
	_ "kengine.io/gateway/proxy/santls"
	_ "kengine.io/gateway/proxy/session"
	_ "kengine.io/gateway/proxy/validate"
)

// DefaultGCPercent is the Go GC target when GOGC is not set: the heap may grow to 1.5× the
// live heap between collections instead of 2×. A proxy's live heap is mostly its provisioned
// config, so this bounds what a config of thousands of routes costs in memory, for more
// frequent collections (measured in docs/bench.md, "proxyMemory"). GOGC in the environment
// wins; Caddy's `run` also sets GOMEMLIMIT from the container's memory limit.
const DefaultGCPercent = 50

func main() {
	setGCPercent(os.LookupEnv("GOGC"))
	caddycmd.Main()
}

// setGCPercent applies DefaultGCPercent unless GOGC is set (the runtime has read it then).
func setGCPercent(_ string, set bool) {
	if !set {
		debug.SetGCPercent(DefaultGCPercent)
	}
}
