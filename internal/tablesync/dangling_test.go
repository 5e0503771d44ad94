package tablesync

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// rsync's stderr for a listing that ended with exit code 23 (rsync 3.5.0
// local and daemon; the "rsync: [sender] " form of other versions): only
// when every line is a dangling link (or the summary) are they tolerated.
func TestDanglingLinks(t *testing.T) {
	const summary = "rsync error: some files/attrs were not transferred (see previous errors) (code 23) at main.c(1956) [generator=3.5.0]\n"
	for _, tc := range []struct {
		stderr string
		want   []string
		ok     bool
	}{
		{"symlink has no referent: \"/srv/syzygy/KQvK.rtbw\"\n" + summary, []string{"/srv/syzygy/KQvK.rtbw"}, true},
		{"symlink has no referent: \"KQvK.rtbw\" (in tables)\nsymlink has no referent: \"dtz/K Q\\\"vK.rtbz\" (in tables)\n" + summary,
			[]string{"KQvK.rtbw", "dtz/K Q\\\"vK.rtbz"}, true},
		{"rsync: [sender] symlink has no referent: \"/srv/s/KQvK.rtbw\"\n" + summary, []string{"/srv/s/KQvK.rtbw"}, true},
		{"rsync: symlink has no referent: \"/srv/s/KQvK.rtbw\"\n", []string{"/srv/s/KQvK.rtbw"}, true},
		// anything else: not tolerated
		{"symlink has no referent: \"KQvK.rtbw\" (in tables)\nrsync: [sender] opendir \"secret\" (in tables) failed: Permission denied (13)\n" + summary, nil, false},
		{"rsync: [sender] readlink_stat(\"KQvK.rtbw\" (in tables)) failed: Permission denied (13)\n" + summary, nil, false},
		{"rsync: [sender] read errors mapping \"/srv/s/KQvK.rtbw\": Input/output error (5)\n" + summary, nil, false},
		{summary, nil, false},
		{"", nil, false},
	} {
		got, ok := danglingLinks(tc.stderr)
		if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %q %v, want %q %v", tc.stderr, got, ok, tc.want, tc.ok)
		}
	}
}

// The path rsync prints for a dangling link, back to the path under the
// source root: module-relative from a daemon (the source a directory in
// the module or not), in full for a local or ssh source (given through a
// symlink or not), a tail of it whose directory the listing holds otherwise.
func TestResolveLinks(t *testing.T) {
	listing := "drwxr-xr-x 4096 2026/12/01 13:59:18 .\n" +
		"drwxr-xr-x 4096 2026/12/01 13:59:18 dtz\n" +
		"drwxr-xr-x 4096 2026/12/01 13:59:18 wdl\n" +
		"drwxr-xr-x 4096 2026/12/01 13:59:18 wdl/6 men\n"
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "syzygy")
	os.Symlink(real, link)
	for _, tc := range []struct{ from, printed, want string }{
		{"rsync://old:873/tables", "KQvK.rtbw", "KQvK.rtbw"},
		{"rsync://old/tables/", "dtz/KQvK.rtbz", "dtz/KQvK.rtbz"},
		{"rsync://old/tables/syzygy", "syzygy/wdl/6 men/KQRvKQR.rtbw", "wdl/6 men/KQRvKQR.rtbw"},
		{"old::tables/syzygy", "syzygy/dtz/KQvK.rtbz", "dtz/KQvK.rtbz"},
		{"old:/srv/dtz", "/srv/dtz/KQvK.rtbz", "KQvK.rtbz"}, // the root is called dtz too
		{"old:syzygy", "/home/u/syzygy/dtz/KQvK.rtbz", "dtz/KQvK.rtbz"},
		{link, link + "/dtz/KQvK.rtbz", "dtz/KQvK.rtbz"},
		{link, real + "/wdl/KQvK.rtbw", "wdl/KQvK.rtbw"},
		{"/elsewhere", "/mnt/x/KQvK.rtbw", "KQvK.rtbw"},
	} {
		got := resolveLinks([]string{tc.printed}, tc.from, listing)
		if len(got) != 1 || got[0].Rel != tc.want || got[0].Printed != tc.printed {
			t.Errorf("from %s, rsync printed %q: %+v, want %q", tc.from, tc.printed, got, tc.want)
		}
	}
}
