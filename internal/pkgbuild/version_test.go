package pkgbuild

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/internal/execx"
)

var day = time.Date(2026, 12, 1, 23, 59, 0, 0, time.UTC)

func TestDebianVersion(t *testing.T) {
	for _, tc := range []struct{ describe, want string }{
		{"189c88f", "0.0~git20261201.189c88f"},
		{"189c88f-dirty", "0.0~git20261201.189c88f+dirty"},
		{"v1.2.3", "1.2.3"},
		{"1.2.3\n", "1.2.3"},
		{"v1.2.3-rc1", "1.2.3~rc1"},
		{"v1.2.3-4-gabc1234", "1.2.3+git20261201.4.abc1234"},
		{"v1.2.3-4-gabc1234-dirty", "1.2.3+git20261201.4.abc1234+dirty"},
		{"v1.2.3-rc1-4-gabc1234", "1.2.3~rc1+git20261201.4.abc1234"},
		{"lab-ok-12-gabc1234", "0.0~git20261201.abc1234"},
	} {
		got, err := DebianVersion(tc.describe, day)
		if err != nil || got != tc.want {
			t.Errorf("DebianVersion(%q) = %q, %v; want %q", tc.describe, got, err, tc.want)
		}
	}
}

func TestDebianVersionRejects(t *testing.T) {
	for _, d := range []string{"", "-dirty", "lab-ok", "v1.2.3 rm -rf", "v1.2_3", "v1:2", "vX"} {
		if v, err := DebianVersion(d, day); err == nil {
			t.Errorf("DebianVersion(%q) = %q, want an error", d, v)
		}
	}
}

// Debian compares versions with ~ before anything; an untagged build must
// sort before the first release, a git build after its tag.
func TestDebianVersionOrder(t *testing.T) {
	if _, err := exec.LookPath("dpkg"); err != nil {
		t.Skip("dpkg not installed: cannot compare Debian versions")
	}
	lt := func(a, b string) {
		if _, err := (execx.Exec{}).Run(context.Background(), "dpkg", "--compare-versions", a, "lt", b); err != nil {
			t.Errorf("want %s < %s: %v", a, b, err)
		}
	}
	must := func(d string) string {
		v, err := DebianVersion(d, day)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	lt(FallbackVersion, must("189c88f"))
	lt(must("189c88f"), must("v0.1.0"))
	lt(must("v0.1.0-rc1"), must("v0.1.0"))
	lt(must("v0.1.0"), must("v0.1.0-3-gabc1234"))
	lt(must("v0.1.0-3-gabc1234"), must("v0.1.1"))
}

func TestGitVersion(t *testing.T) {
	r := execx.NewRecorded().
		On(execx.Reply{Stdout: "v0.3.0-2-gdeadbee\n"}, "git", "-C", "/src", "describe", "--tags", "--always", "--dirty").
		On(execx.Reply{Stdout: "deadbeef0123\n"}, "git", "-C", "/src", "rev-parse", "--short=12", "HEAD").
		On(execx.Reply{Stdout: "1796083200\n"}, "git", "-C", "/src", "log", "-1", "--format=%ct")
	v, c, d, err := GitVersion(context.Background(), r, "/src")
	if err != nil || v != "0.3.0+git20261201.2.deadbee" || c != "deadbeef0123" || d.Unix() != 1796083200 {
		t.Fatalf("GitVersion = %q %q %v %v", v, c, d, err)
	}
}

func TestGitVersionFallback(t *testing.T) {
	r := execx.NewRecorded() // every command fails: no git, or no repository
	v, c, _, err := GitVersion(context.Background(), r, "/tarball")
	if err == nil || v != FallbackVersion || c != "unknown" || !strings.Contains(err.Error(), "/tarball") {
		t.Fatalf("GitVersion without git = %q %q %v", v, c, err)
	}
}
