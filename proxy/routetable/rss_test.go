package routetable

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"kengine.io/gateway/proxy/internal/caddytest"
)

// The Bundled proxy's memory with 5,000 routes in a route table, measured on a real process:
//
//	KG_CADDY_BIN=$(flock /tmp/kg-peers.lock bash hack/build-peers.sh caddy | tail -1)/bin/caddy \
//	  go test -run TestBundledProxyRSS -v ./proxy/routetable/
//
// It loads (1) 5,000 hosts in the table, (2) the same routes in stock Caddy's shape (one
// subroute per host behind a host matcher) for comparison, (3) the table again and then sends
// 5,000 single-host deltas (each host replaced once), and logs VmRSS after each; with
// KG_RSS_BATCH=1 instead a /load holding only the default entry and the 5,000 hosts as one
// batch over the admin API (how a controller would send them). Skipped
// without KG_CADDY_BIN: it measures, it does not assert (no timed or sized assertions).
func TestBundledProxyRSS(t *testing.T) {
	bin := os.Getenv("KG_CADDY_BIN")
	if bin == "" {
		t.Skip("KG_CADDY_BIN not set")
	}
	const hosts = 5000
	admin := caddytest.AdminSocket(t)
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := startCaddy(t, bin, admin.Listen)

	client := admin.Client
	client.Timeout = 5 * time.Minute
	do := func(method, path string, body []byte) { adminCall(t, client, admin.URL, method, path, body) }
	rss := func() int {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.SplitSeq(string(status), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
				return kb
			}
		}
		return 0
	}
	backends := `{"handle":[{"handler":"reverse_proxy","upstreams":[{"dial":"127.0.0.1:9"}]}],"match":[{"vars":{"kengine_backend":["b%d"]}}],"terminal":true}`
	backendRoutes := make([]string, 100)
	for i := range backendRoutes {
		backendRoutes[i] = fmt.Sprintf(backends, i)
	}
	server := func(routes string) []byte {
		return []byte(fmt.Sprintf(`{"admin":{"listen":%q},"apps":{"http":{"servers":{"http-80":{"listen":[%q],"automatic_https":{"disable":true},"routes":[%s,%s]}}}}}`,
			admin.Listen, httpAddr, routes, strings.Join(backendRoutes, ",")))
	}
	table := map[string]json.RawMessage{AnyHost: json.RawMessage(defaultRoutes)}
	var linear []string
	for i := range hosts {
		table[fmt.Sprintf("r%d.bench.local", i)] = json.RawMessage(benchRoutes(i))
		linear = append(linear, fmt.Sprintf(`{"group":"listeners","match":[{"host":["r%d.bench.local"]}],"handle":[{"handler":"subroute","routes":%s}]}`, i, benchRoutes(i)))
	}
	tableJSON, _ := json.Marshal(map[string]any{"handler": "kengine_route_table", "id": "rss", "hosts": table})
	tableCfg := server(fmt.Sprintf(`{"handle":[%s]}`, tableJSON))
	linearCfg := server(strings.Join(linear, ","))

	time.Sleep(time.Second)
	t.Logf("boot config: VmRSS %d kB", rss())
	if os.Getenv("KG_RSS_BATCH") != "" {
		// The table through the admin API: the /load holds only the default entry.
		emptyJSON, _ := json.Marshal(map[string]any{"handler": "kengine_route_table", "id": "rss", "hosts": map[string]json.RawMessage{AnyHost: json.RawMessage(defaultRoutes)}})
		do("POST", "/load", server(fmt.Sprintf(`{"handle":[%s]}`, emptyJSON)))
		batch, _ := json.Marshal(Batch{Hosts: table})
		do("POST", AdminPrefix+"rss", batch)
		time.Sleep(2 * time.Second)
		t.Logf("%d hosts sent as one batch after a /load without them: VmRSS %d kB", hosts, rss())
		return
	}
	do("POST", "/load", tableCfg)
	time.Sleep(2 * time.Second)
	t.Logf("%d hosts in a route table: VmRSS %d kB (config %d bytes)", hosts, rss(), len(tableCfg))
	do("POST", "/load", linearCfg)
	time.Sleep(2 * time.Second)
	t.Logf("%d hosts in stock Caddy's shape: VmRSS %d kB (config %d bytes)", hosts, rss(), len(linearCfg))
	do("POST", "/load", tableCfg)
	start := time.Now()
	for i := range hosts {
		do("PUT", fmt.Sprintf("%srss/hosts/r%d.bench.local", AdminPrefix, i), []byte(benchRoutes(i+1)))
	}
	elapsed := time.Since(start)
	time.Sleep(2 * time.Second)
	t.Logf("after %d single-host deltas (%.2f ms each over HTTP): VmRSS %d kB", hosts, float64(elapsed.Microseconds())/1000/hosts, rss())
}

// adminCall sends one request to a Caddy admin API started by the test, retrying while the
// process starts or replaces its admin server, and fails the test on any answer but 200.
func adminCall(t *testing.T, client *http.Client, base, method, path string, body []byte) []byte {
	t.Helper()
	for range 100 {
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Cache-Control", "must-revalidate")
		resp, err := client.Do(req)
		if err != nil {
			time.Sleep(100 * time.Millisecond) // the process is starting, or replacing its admin server
			continue
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, msg)
		}
		return msg
	}
	t.Fatalf("%s %s: no answer", method, path)
	return nil
}

// startCaddy runs the Caddy binary `bin` with only its admin API on `adminListen`, its data and
// config directories in the test's own, and stops it when the test ends.
func startCaddy(t *testing.T, bin, adminListen string) *exec.Cmd {
	t.Helper()
	dir := t.TempDir()
	boot := fmt.Sprintf(`{"admin":{"listen":%q}}`, adminListen)
	if err := os.WriteFile(dir+"/boot.json", []byte(boot), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--config", dir+"/boot.json")
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}
