package main

import (
	"runtime/debug"
	"testing"
)

// Without GOGC the proxy runs at DefaultGCPercent; with GOGC set, the runtime's value stays.
func TestSetGCPercent(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })

	setGCPercent("", false)
	if got := debug.SetGCPercent(100); got != DefaultGCPercent {
		t.Errorf("GOGC unset: GC percent %d, want %d", got, DefaultGCPercent)
	}
	setGCPercent("100", true)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=100: GC percent %d, want 100 (the runtime's)", got)
	}
}
