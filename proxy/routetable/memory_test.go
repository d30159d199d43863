package routetable

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"kengine.io/gateway/proxy/internal/caddytest"
)

// The memory of a real Bundled proxy process running a controller-rendered config, the offline
// measurement behind docs/bench.md's proxyMemory row:
//
//	KG_CADDY_BIN=/path/to/caddy KG_RSS_CONFIG=/path/to/config.json \
//	  go test -run TestBundledConfigMemory -v ./proxy/routetable/
//
// KG_RSS_CONFIG is Caddy JSON as the controller pushes it (compact); its admin listener and its
// servers' listen addresses are replaced by the test's. The process first runs the config's
// skeleton (every route table holding only its `*` entry), then the whole config arrives:
// by one `/load` (KG_RSS_MODE unset or "load", what a proxy loaded from a full config runs) or
// as one batch per table over the admin API after the skeleton ("deltas"). After each step it
// forces a GC (`/debug/pprof/heap?gc=1`) and logs VmRSS (anonymous and file-backed), the Go heap
// (live, in use, and what the runtime holds from the OS) and the load's wall and CPU time; the
// difference between the two steps divided by the config's route-table keys is the bytes per
// host. GOMEMLIMIT and GOGC pass through to the process. Then it times KG_RSS_REQUESTS (default
// 20,000) requests on one connection for a host no table key names (the `*` entry's 404: the
// table lookup and Caddy's request path, no backend), and reports the process's CPU time for
// them. KG_RSS_PROFILE=FILE writes the heap profile after the whole config (for `go tool
// pprof -sample_index=inuse_space`). Skipped without both variables: it measures, it asserts nothing about sizes.
func TestBundledConfigMemory(t *testing.T) {
	bin, cfgPath := os.Getenv("KG_CADDY_BIN"), os.Getenv("KG_RSS_CONFIG")
	if bin == "" || cfgPath == "" {
		t.Skip("KG_CADDY_BIN and KG_RSS_CONFIG not set")
	}
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	admin := caddytest.AdminSocket(t)
	port := freePort(t)
	full, skeleton, tables, _ := memoryConfigs(t, raw, admin.Listen, port)

	pid := startCaddy(t, bin, admin.Listen).Process.Pid

	client := admin.Client
	client.Timeout = 5 * time.Minute
	do := func(method, path string, body []byte) []byte {
		return adminCall(t, client, admin.URL, method, path, body)
	}
	type sample struct{ rss, anon, file, live, inuse, heapSys, released uint64 }
	measure := func() sample {
		t.Helper()
		time.Sleep(2 * time.Second)
		do("GET", "/debug/pprof/heap?gc=1", nil) // a full GC before reading
		var vars struct {
			Memstats struct{ HeapAlloc, HeapInuse, HeapSys, HeapReleased uint64 } `json:"memstats"`
		}
		if err := json.Unmarshal(do("GET", "/debug/vars", nil), &vars); err != nil {
			t.Fatal(err)
		}
		m := vars.Memstats
		return sample{
			rss: procStatus(t, pid, "VmRSS"), anon: procStatus(t, pid, "RssAnon"), file: procStatus(t, pid, "RssFile"),
			live: m.HeapAlloc, inuse: m.HeapInuse, heapSys: m.HeapSys, released: m.HeapReleased,
		}
	}
	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	logSample := func(what string, s sample, wall time.Duration, cpu int) {
		t.Logf("%s: VmRSS %.1f MiB (anon %.1f, file %.1f); heap live %.1f MiB, in use %.1f, held %.1f; load %d ms wall, %d ms CPU",
			what, mib(s.rss), mib(s.anon), mib(s.file), mib(s.live), mib(s.inuse), mib(s.heapSys-s.released), wall.Milliseconds(), cpu)
	}
	timed := func(f func()) (time.Duration, int) {
		c0, t0 := cpuMs(t, pid), time.Now()
		f()
		return time.Since(t0), cpuMs(t, pid) - c0
	}

	t.Logf("GOMEMLIMIT=%q GOGC=%q, config %d bytes, %d route-table keys in %d tables",
		os.Getenv("GOMEMLIMIT"), os.Getenv("GOGC"), len(full), countKeys(tables), len(tables))
	time.Sleep(time.Second)
	wall, cpu := timed(func() { do("POST", "/load", skeleton) })
	base := measure()
	logSample("skeleton (tables hold `*` only)", base, wall, cpu)

	mode := os.Getenv("KG_RSS_MODE")
	switch mode {
	case "", "load":
		wall, cpu = timed(func() { do("POST", "/load", full) })
	case "deltas":
		wall, cpu = timed(func() {
			for id, hosts := range tables {
				batch, _ := json.Marshal(Batch{Hosts: hosts})
				do("POST", AdminPrefix+url.PathEscape(id), batch)
			}
		})
	default:
		t.Fatalf("KG_RSS_MODE %q: want load or deltas", mode)
	}
	after := measure()
	logSample("whole config by "+map[bool]string{true: "deltas", false: "/load"}[mode == "deltas"], after, wall, cpu)
	if out := os.Getenv("KG_RSS_PROFILE"); out != "" { // for go tool pprof -sample_index=inuse_space
		if err := os.WriteFile(out, do("GET", "/debug/pprof/heap?gc=1", nil), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	n := uint64(countKeys(tables))
	t.Logf("per route-table key: %.0f bytes of live heap, %.0f bytes of RSS",
		float64(after.live-base.live)/float64(n), float64(int64(after.rss)-int64(base.rss))/float64(n))

	requests := 20000
	if v := os.Getenv("KG_RSS_REQUESTS"); v != "" {
		requests, _ = strconv.Atoi(v)
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	get := func() {
		req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d/", port), nil)
		req.Host = "unknown.memory.test"
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for range 500 {
		get()
	}
	wall, cpu = timed(func() {
		for range requests {
			get()
		}
	})
	t.Logf("%d requests for an unknown host on one connection: %.1f µs wall, %.1f µs proxy CPU each",
		requests, float64(wall.Microseconds())/float64(requests), float64(cpu)*1000/float64(requests))
	logSample("after the requests", measure(), 0, 0)
}

// memoryConfigs rewrites a controller config for the test (admin listener, every server on
// 127.0.0.1:port) and returns it whole, its skeleton (each kengine_route_table handler with only
// its `*` entry), each table's hosts but `*` by id, and a host of the first table.
func memoryConfigs(t *testing.T, raw []byte, adminListen string, port int) (full, skeleton []byte, tables map[string]map[string]json.RawMessage, host string) {
	t.Helper()
	var cfg map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&cfg); err != nil {
		t.Fatal(err)
	}
	cfg["admin"] = map[string]any{"listen": adminListen, "config": map[string]any{"persist": false}}
	if servers, ok := dig(cfg, "apps", "http", "servers").(map[string]any); ok {
		for _, s := range servers {
			s.(map[string]any)["listen"] = []any{fmt.Sprintf("127.0.0.1:%d", port)}
			break
		}
		for name, s := range servers { // one server only: the others would need ports of their own
			if s.(map[string]any)["listen"].([]any)[0] != fmt.Sprintf("127.0.0.1:%d", port) {
				delete(servers, name)
			}
		}
	}
	full, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tables = map[string]map[string]json.RawMessage{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["handler"] == "kengine_route_table" {
				hosts := v["hosts"].(map[string]any)
				rest := map[string]json.RawMessage{}
				var keys []string
				for k, routes := range hosts {
					if k != AnyHost {
						b, _ := json.Marshal(routes)
						rest[k] = b
						keys = append(keys, k)
						delete(hosts, k)
					}
				}
				sort.Strings(keys)
				if host == "" && len(keys) > 0 && !strings.HasPrefix(keys[0], "*") {
					host = keys[0]
				}
				tables[v["id"].(string)] = rest
				return
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(cfg)
	if len(tables) == 0 {
		t.Fatal("the config has no kengine_route_table handler")
	}
	skeleton, err = json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return full, skeleton, tables, host
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func countKeys(tables map[string]map[string]json.RawMessage) int {
	n := 0
	for _, h := range tables {
		n += len(h)
	}
	return n
}

// procStatus is a /proc/<pid>/status field in bytes (VmRSS, RssAnon, RssFile).
func procStatus(t *testing.T, pid int, field string) uint64 {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// cpuMs is the CPU time (user + system) a process used so far, in ms (10 ms ticks).
func cpuMs(t *testing.T, pid int) int {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
	user, _ := strconv.Atoi(f[11])
	sys, _ := strconv.Atoi(f[12])
	return (user + sys) * 10
}
