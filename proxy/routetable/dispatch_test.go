package routetable

import (
	"encoding/json"
	"testing"
)

// The backend a host's list names answers; a list that names none, an id the table does not
// hold, or a host without a key goes on to next; a list that answers keeps its answer.
func TestBackendsAnswerForTheIDTheListSets(t *testing.T) {
	ctx := testContext(t)
	names := func(id string) string {
		return `[{"match":[{"path":["/x*"]}],"handle":[{"handler":"kengine_rt_probe","tag":"own"}],"terminal":true},` +
			`{"handle":[{"handler":"vars","kengine_backend":"` + id + `"}]}]`
	}
	h := &Handler{ID: "dispatch", Hosts: map[string]json.RawMessage{
		"a.example.com": json.RawMessage(names("b1")),
		"b.example.com": json.RawMessage(names("b2")),
		"c.example.com": json.RawMessage(names("missing")),
		"d.example.com": json.RawMessage(`[{"handle":[{"handler":"vars","other":"b1"}]}]`),
	}, Backends: map[string]json.RawMessage{
		"b1": json.RawMessage(`{"handler":"kengine_rt_probe","tag":"one"}`),
		"b2": json.RawMessage(`{"handler":"kengine_rt_probe","tag":"two"}`),
	}}
	before := probeLive.Load()
	if err := h.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	// (three lists' own answers and the two backends)
	if got := probeLive.Load() - before; got != 5 {
		t.Errorf("probes provisioned: %d, want 5", got)
	}
	for host, want := range map[string]string{
		"a.example.com":      "one",
		"B.example.com:8080": "two",
		"c.example.com":      "next",
		"d.example.com":      "next",
		"e.example.com":      "next",
	} {
		if got := serve(t, h, host); got != want {
			t.Errorf("%s: %q, want %q", host, got, want)
		}
	}
	if got := serveURL(t, h, "http://a.example.com/x1"); got != "own" {
		t.Errorf("a list's own answer: %q, want own", got)
	}
	if err := h.Cleanup(); err != nil {
		t.Fatal(err)
	}
}

func TestBackendThatFailsToProvisionFailsTheHandler(t *testing.T) {
	h := &Handler{ID: "dispatch-fail", Hosts: map[string]json.RawMessage{"*": json.RawMessage(`[]`)},
		Backends: map[string]json.RawMessage{"b1": json.RawMessage(`{"handler":"kengine_rt_probe","fail":true}`)}}
	if err := h.Provision(testContext(t)); err == nil {
		_ = h.Cleanup()
		t.Fatal("provisioned a table whose backend failed")
	}
	if lookupTable("dispatch-fail") != nil {
		t.Error("a failed table stays registered")
	}
}
