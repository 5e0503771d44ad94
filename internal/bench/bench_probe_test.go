package bench

import (
	"context"
	"math/rand/v2"
	"testing"
)

// BenchmarkProbeRequest is one request (93 probes) on the real tables, warm
// page cache, pread without store.
func BenchmarkProbeRequest(b *testing.B) {
	tables, _ := copyTables(b)
	set, err := LoadTables(context.Background(), []string{tables})
	if err != nil {
		b.Fatal(err)
	}
	p := sequentialProber(b, set, AdviseNormal, false)
	rng := rand.New(rand.NewPCG(1, 1))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if out := p.request(context.Background(), rng); out.Err != nil {
			b.Fatal(out.Err)
		}
	}
}
