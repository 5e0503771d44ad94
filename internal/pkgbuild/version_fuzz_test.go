package pkgbuild

import (
	"strings"
	"testing"
	"time"
)

// git describe output is input: whatever it prints, DebianVersion either
// refuses it or returns a version Debian accepts, the same one every time,
// marking dirty trees.
func FuzzDebianVersion(f *testing.F) {
	for _, s := range []string{"189c88f", "189c88f-dirty", "v1.2.3", "v1.2.3-rc1-4-gabc1234-dirty", "lab-ok-12-gabc1234", "v1:2", "-dirty", "v-1-g1234567", "1234567"} {
		f.Add(s, int64(1796083200))
	}
	f.Fuzz(func(t *testing.T, describe string, sec int64) {
		date := time.Unix(sec%(1<<40), 0)
		v, err := DebianVersion(describe, date)
		if err != nil {
			if v != "" {
				t.Fatalf("error %v with version %q", err, v)
			}
			return
		}
		if !debianUpstream.MatchString(v) || len(v) > len(describe)+40 {
			t.Fatalf("DebianVersion(%q) = %q: not a valid native Debian version", describe, v)
		}
		if v2, _ := DebianVersion(describe, date); v2 != v {
			t.Fatalf("not deterministic: %q then %q", v, v2)
		}
		if strings.HasSuffix(strings.TrimSpace(describe), "-dirty") != strings.HasSuffix(v, "+dirty") {
			t.Fatalf("DebianVersion(%q) = %q: dirty marker lost or invented", describe, v)
		}
	})
}
