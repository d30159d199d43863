// Command kg-probe is the small helper baked into the real node's test images (hack/node/):
//
//	kg-probe          prints, as one JSON line, who the process runs as and under what limits:
//	                  uid, gid, effective capabilities, seccomp mode, no_new_privs, and whether
//	                  the root file system is writable (it tries to create a file in /)
//	kg-probe pause    the pod sandbox's process: sleeps until SIGTERM or SIGINT, reaps children
//	kg-probe get URL  an HTTP GET: prints the status code and the body, exits 1 on an error
//	kg-probe kube PATH   a GET of PATH from the API server as an in-cluster client: the
//	                  kubernetes Service's environment, the service-account CA and token
//	kg-probe lookup NAME  resolves NAME with the pod's /etc/resolv.conf, prints the addresses
//	kg-probe hog MiB  allocates and touches MiB mebibytes, then sleeps (a memory limit below
//	                  that gets the container OOM-killed)
//
// Installed as /bin/test in the stock Caddy images, it is `test -e|-f|-d PATH` (what an exec
// probe asks of the official image's busybox): exit 0 when PATH exists, is a regular file or a
// directory.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if filepath.Base(os.Args[0]) == "test" {
		os.Exit(test(os.Args[1:]))
	}
	mode := ""
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	switch mode {
	case "pause":
		pause()
	case "get":
		get(os.Args[2])
	case "kube":
		kube(os.Args[2])
	case "lookup":
		addrs, err := net.LookupHost(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(strings.Join(addrs, "\n"))
	case "hog":
		mib := 256
		if len(os.Args) > 2 {
			if n, err := strconv.Atoi(os.Args[2]); err == nil {
				mib = n
			}
		}
		hog(mib)
	default:
		whoami()
	}
}

// test is the part of test(1) the images' probes use: -e, -f or -d PATH; 2 on other usage.
func test(args []string) int {
	if len(args) != 2 {
		return 2
	}
	fi, err := os.Stat(args[1])
	ok := false
	switch args[0] {
	case "-e":
		ok = err == nil
	case "-f":
		ok = err == nil && fi.Mode().IsRegular()
	case "-d":
		ok = err == nil && fi.IsDir()
	default:
		return 2
	}
	if ok {
		return 0
	}
	return 1
}

func pause() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sigs {
		if s == syscall.SIGCHLD {
			for {
				var ws syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
			continue
		}
		os.Exit(0)
	}
}

func get(url string) {
	client := &http.Client{Timeout: 10 * time.Second}
	printResponse(client.Get(url))
}

// printResponse prints the status code and the body, or the error and exits 1.
func printResponse(resp *http.Response, err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d\n%s", resp.StatusCode, body)
}

// kube GETs path from the API server as an in-cluster client does: the kubernetes Service from
// the environment the kubelet sets, its CA and the pod's service-account token.
func kube(path string) {
	const sa = "/var/run/secrets/kubernetes.io/serviceaccount/"
	ca, err := os.ReadFile(sa + "ca.crt")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	token, err := os.ReadFile(sa + "token")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	client := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}
	host := net.JoinHostPort(os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT"))
	req, _ := http.NewRequest("GET", "https://"+host+path, nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	printResponse(client.Do(req))
}

func hog(mib int) {
	held := make([][]byte, 0, mib)
	for i := 0; i < mib; i++ {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1
		}
		held = append(held, b)
		if (i+1)%16 == 0 {
			fmt.Printf("hog: %d MiB held\n", i+1)
		}
	}
	fmt.Printf("hog: all %d MiB held\n", len(held))
	for {
		time.Sleep(time.Hour)
	}
}

// status returns the named field of /proc/self/status ("" if absent).
func status(field string) string {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func whoami() {
	rootWritable := true
	writeError := ""
	f, err := os.CreateTemp("/", ".kg-probe-")
	if err != nil {
		rootWritable = false
		writeError = err.Error()
	} else {
		f.Close()
		os.Remove(f.Name())
	}
	out := map[string]any{
		"uid":            os.Getuid(),
		"gid":            os.Getgid(),
		"capEff":         status("CapEff"),
		"capBnd":         status("CapBnd"),
		"noNewPrivs":     status("NoNewPrivs"),
		"seccomp":        status("Seccomp"),
		"rootWritable":   rootWritable,
		"rootWriteError": writeError,
		"saToken":        fileExists("/var/run/secrets/kubernetes.io/serviceaccount/token"),
	}
	line, _ := json.Marshal(out)
	fmt.Println(string(line))
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
