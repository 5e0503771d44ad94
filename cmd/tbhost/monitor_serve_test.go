package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tbhost/tbhost/monitor"
)

// arraysGauge is tbhost_monitor_arrays as the exporter serves it (-1: absent).
func arraysGauge(t *testing.T, exp *monitor.Exporter) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(exp)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "tbhost_monitor_arrays" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

// Issue 18: `monitor serve` with no arrays served nothing about it: now its
// log says so and it exports tbhost_monitor_arrays 0 (alertable).
func TestMonitorServeWithNoArraysSaysSoAndExportsZero(t *testing.T) {
	var log bytes.Buffer
	exp := &monitor.Exporter{Env: monitor.Env{Root: noArrays(t)}, Interval: time.Second, TopologyEvery: time.Minute,
		Thresholds: monitor.DefaultThresholds(), Log: slog.New(slog.NewTextHandler(&log, nil))}
	if err := exp.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := arraysGauge(t, exp); got != 0 {
		t.Errorf("tbhost_monitor_arrays = %v, want 0", got)
	}
	if !strings.Contains(log.String(), "no RAID arrays found") {
		t.Errorf("log: %q", log.String())
	}
	exp = &monitor.Exporter{Env: monitor.Env{Root: derived(t, "balanced")}, Interval: time.Second, TopologyEvery: time.Minute,
		Thresholds: monitor.DefaultThresholds()}
	if err := exp.Step(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := arraysGauge(t, exp); got < 1 {
		t.Errorf("balanced tree: tbhost_monitor_arrays = %v", got)
	}
}
