package main

import (
	"context"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/sizes"
	"github.com/tbhost/tbhost/internal/timeline"
	"github.com/tbhost/tbhost/lvm"
	"github.com/tbhost/tbhost/playbooks"
)

// health-check's scrub defaults, fed the reference host, forecast a full
// pass within timeline.TargetScrubNights (issue 15). The array comes from
// the real planner on the embedded reference host, the rate and budget from
// the embedded playbook, so changing either one re-checks the promise.
func TestHealthCheckDefaultsScrubTheReferenceHostInTime(t *testing.T) {
	pb, err := playbooks.Embedded("health-check")
	if err != nil {
		t.Fatal(err)
	}
	def := map[string]string{}
	for _, p := range pb.Params {
		if p.Default != nil {
			def[p.Name] = *p.Default
		}
	}
	rate, err := sizes.ParseRate(def["scrub_rate"])
	if err != nil {
		t.Fatalf("scrub_rate default %q: %v", def["scrub_rate"], err)
	}
	budget, err := time.ParseDuration(def["scrub_budget"])
	if err != nil {
		t.Fatalf("scrub_budget default %q: %v", def["scrub_budget"], err)
	}
	inv, err := lvm.ReferenceInventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := lvm.MakePlan(inv, lvm.PlanOptions{IntegrityMode: "journal"})
	if err != nil {
		t.Fatal(err)
	}
	var o lvm.ForecastOptions
	o.Rates.Scrub, o.Rates.ScrubBudget = rate, budget
	if err := plan.AddForecast(o); err != nil {
		t.Fatal(err)
	}
	for _, s := range plan.Timeline.Steps {
		if s.Name != "scrub-pass" {
			continue
		}
		t.Logf("health-check defaults %s for %s: %s", def["scrub_rate"], budget, s.What)
		if s.Nights < 1 || s.Nights > timeline.TargetScrubNights {
			t.Errorf("a full scrub pass takes %d nights with health-check's defaults, target %d", s.Nights, timeline.TargetScrubNights)
		}
		return
	}
	t.Fatal("the reference host's timeline has no scrub-pass step")
}
