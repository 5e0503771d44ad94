//go:build lab

package lab

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tbhost/tbhost/prefix/prefixtest"
)

// failingStoreTables split addSyntheticTables's set: the first three are
// extracted while the store's disk is healthy, the last three while it
// fails every write.
var failingStoreTables = [2][]string{
	{"KRBvKR.rtbw", "KBPvKN.rtbz", "KRPvKR.rtbz"},
	{"KRPvKR.rtbw", "KQNvKR.rtbz", "KQPvKQ.rtbw"},
}

// failingStoreScript: prefix extract onto an ext4 store whose disk starts
// failing every write (dm-flakey with error_writes, swapped in under the
// mounted file system), on the guest's Debian 12 kernel: syncfs and fsync
// must report the writeback errors to extract, which must rename nothing
// it could not make durable. Then the disk is healed (the linear table
// again), the file system unmounted and mounted (nothing of the failed
// run left in the page cache), and the store verified with --full, the
// failed tables extracted again and the whole store verified.
//
// Two scenarios, each on ext4 with a journal (a store as mke2fs makes it:
// the failed journal commit aborts the journal) and without one (no
// journal commit in the way: the data's writeback error alone, through
// syncfs's and fsync's errseq reporting):
//   - $v: the disk fails between two runs: /t1 extracted while healthy,
//     then /t2 onto the failing disk;
//   - partial-$v: the disk fails in the middle of one run over all six
//     tables (--jobs 1, --pause-each 1s between two renames), once the
//     run's first manifest lines are on disk (its first flush, at its
//     second rename, 1 s into the run) and before its next rename: some
//     prefixes are durable and recorded, the rest renamed in the page
//     cache only, their directory fsync and manifest lines failing.
var failingStoreScript = `. /lab/lib.sh
mkdir -p /t1 /t2
for n in ` + strings.Join(failingStoreTables[0], " ") + `; do ln /synth/$n /t1/$n || exit 40; done
for n in ` + strings.Join(failingStoreTables[1], " ") + `; do ln /synth/$n /t2/$n || exit 40; done
HDD=$(lab_disks hdd)
sectors=65536 # 32 MiB a store
start=0
# store_up NAME FEATURES: a fresh ext4 on dm-linear at $start, mounted on
# /mnt/NAME with an empty store directory
store_up() {
  lab_run dmsetup create st-$1 --table "0 $sectors linear $HDD $start" && dmsetup mknodes st-$1 || exit 41 # no udev here
  lab_run /sbin/mke2fs -t ext4 -q -F $2 /dev/mapper/st-$1 || exit 42
  mkdir -p /mnt/$1 && mount -t ext4 /dev/mapper/st-$1 /mnt/$1 && mkdir /mnt/$1/store || exit 43
}
# fail_writes NAME: every write fails from now on (up 0 s, down 3600 s),
# reads still work; without freezing the file system first (--nolockfs),
# as a disk gives no warning
fail_writes() {
  lab_run dmsetup suspend --nolockfs st-$1 || exit 44
  lab_run dmsetup load st-$1 --table "0 $sectors flakey $HDD $start 0 3600 1 error_writes" || exit 44
  lab_run dmsetup resume st-$1 || exit 44
}
# heal_and_check NAME OUT: the linear table back; unmounted, so that
# nothing the failed run wrote is still cached, and mounted again (e2fsck
# first, as after any I/O error); verify (against the manifest) and
# verify --full (against the tables), extract again, verify --full
heal_and_check() {
  ls -a /mnt/$1/store > $2/failing.ls
  dmesg | grep -iE 'I/O error|EXT4-fs|Buffer I/O|blk_update|flakey' | tail -20 > $2/dmesg.txt
  lab_run dmsetup suspend --nolockfs st-$1 || exit 45
  lab_run dmsetup load st-$1 --table "0 $sectors linear $HDD $start" || exit 45
  lab_run dmsetup resume st-$1 || exit 45
  lab_run umount /mnt/$1 || exit 46
  lab_run /sbin/e2fsck -fy /dev/mapper/st-$1 > $2/fsck.txt 2>&1; echo $? > $2/fsck.rc
  mount -t ext4 /dev/mapper/st-$1 /mnt/$1 || exit 47
  ls -a /mnt/$1/store > $2/remounted.ls
  tbhost prefix verify --json --tables /t1 --tables /t2 --store /mnt/$1/store > $2/verify-fast.json 2> $2/verify-fast.err; echo $? > $2/verify-fast.rc
  tbhost prefix verify --full --json --tables /t1 --tables /t2 --store /mnt/$1/store > $2/verify-after.json 2> $2/verify-after.err; echo $? > $2/verify-after.rc
  tbhost prefix extract --json --tables /t1 --tables /t2 --store /mnt/$1/store > $2/rerun.json 2> $2/rerun.err; echo $? > $2/rerun.rc
  tbhost prefix verify --full --json --tables /t1 --tables /t2 --store /mnt/$1/store > $2/verify-final.json 2> $2/verify-final.err; echo $? > $2/verify-final.rc
  umount /mnt/$1; dmsetup remove st-$1
  start=$((start + sectors))
}
for v in journal nojournal; do
  feat=""; [ $v = nojournal ] && feat="-O ^has_journal"

  lab_step "prefix extract onto a store whose disk fails writes: ext4, $v"
  O=$LAB_OUT/$v; mkdir -p $O
  store_up $v "$feat"
  tbhost prefix extract --json --tables /t1 --store /mnt/$v/store > $O/healthy.json 2> $O/healthy.err; echo $? > $O/healthy.rc
  sync
  fail_writes $v
  tbhost prefix extract --json --tables /t2 --store /mnt/$v/store > $O/failing.json 2> $O/failing.err; echo $? > $O/failing.rc
  heal_and_check $v $O

  for when in manifest rename; do
    lab_step "prefix extract onto a store whose disk fails in the middle of the run, after its first $when: ext4, $v"
    P=after-$when-$v; S=/mnt/$P/store; O=$LAB_OUT/$P; mkdir -p $O
    store_up $P "$feat"
    tbhost prefix extract --json --jobs 1 --pause-each 1s --tables /t1 --tables /t2 --store $S > $O/failing.json 2> $O/failing.err &
    run=$!
    i=0
    until if [ $when = manifest ]; then [ -s $S/tbhost-prefix-manifest.jsonl ]; else ls $S | grep -q '\.prefix$'; fi; do
      sleep 0.01; i=$((i+1)); [ $i -ge 3000 ] && exit 48
    done
    [ $when = manifest ] && sleep 0.1 # the lines' fsync done; the next rename 1 s after the last
    grep -c . $S/tbhost-prefix-manifest.jsonl > $O/lines-at-failure
    ls $S | grep -c '\.prefix$' > $O/renamed-at-failure
    fail_writes $P
    wait $run; echo $? > $O/failing.rc
    heal_and_check $P $O
  done
done

lab_step "prefix verify of a store whose disk fails every read"
P=reads; O=$LAB_OUT/$P; mkdir -p $O
store_up $P ""
tbhost prefix extract --json --tables /t1 --tables /t2 --store /mnt/$P/store > $O/extract.json 2> $O/extract.err; echo $? > $O/extract.rc
# mounted again read-only (no write to fail), the metadata read in while
# the disk is healthy, the prefixes' data not
umount /mnt/$P && mount -o ro -t ext4 /dev/mapper/st-$P /mnt/$P || exit 47
ls -l /mnt/$P/store > /dev/null && cat /mnt/$P/store/tbhost-prefix-manifest.jsonl > /dev/null || exit 47
# every read and write fails from now on (dm-flakey without features)
lab_run dmsetup suspend --nolockfs st-$P || exit 44
lab_run dmsetup load st-$P --table "0 $sectors flakey $HDD $start 0 3600" || exit 44
lab_run dmsetup resume st-$P || exit 44
tbhost prefix verify --json --tables /t1 --tables /t2 --store /mnt/$P/store > $O/verify.json 2> $O/verify.err; echo $? > $O/verify.rc
tbhost prefix verify --full --json --tables /t1 --tables /t2 --store /mnt/$P/store > $O/verify-full.json 2> $O/verify-full.err; echo $? > $O/verify-full.rc
dmesg | grep -iE 'I/O error|EXT4-fs|Buffer I/O|blk_update|flakey' | tail -10 > $O/dmesg.txt
lab_run dmsetup suspend --nolockfs st-$P && lab_run dmsetup load st-$P --table "0 $sectors linear $HDD $start" && lab_run dmsetup resume st-$P || exit 45
umount /mnt/$P; dmsetup remove st-$P
exit 0
`

// TestExtractOntoAFailingStore (issue 16's group commit, on a real kernel
// and real writeback errors): see failingStoreScript. Checked for each
// file system: the failed run exits 1 naming each table of the failing
// half and leaves none of their prefixes in the store, before the remount
// or after, nor their temporary files (except, before the remount, on the
// journal's file system gone read-only, where they cannot be removed);
// after the remount every prefix of the healthy half verifies with --full
// and the failing half is reported missing, nothing else; a rerun on the
// healed disk extracts them and the whole store verifies clean. The runs
// whose disk fails in the middle: see checkFailedMidRun.
//
// The failing half's KQPvKQ.rtbw has a real-size prefix (4 MiB, where the
// others have 6-36 KiB): its copy asks for writeback every 1 MiB, so its
// write errors happen while it is copied, before the batch's syncfs,
// which must still report them (its store descriptor was opened before
// the run wrote anything); the small ones are first written back by the
// syncfs itself.
func TestExtractOntoAFailingStore(t *testing.T) {
	hdd, _ := Disks(HDD, 1, 256, "512n") // seven stores of 32 MiB
	files := map[string][]byte{}
	if err := addSyntheticTables(files); err != nil {
		t.Fatal(err)
	}
	large, err := prefixtest.Build(prefixtest.Spec{Name: "KQPvKQ.rtbw"})
	if err != nil {
		t.Fatal(err)
	}
	files["/synth/KQPvKQ.rtbw"] = large.Bytes
	res := boot(t, Config{Name: "failing-store", Disks: hdd, Script: []byte(failingStoreScript), Files: files, Timeout: 10 * time.Minute})
	if res.ExitCode != 0 {
		t.Fatalf("scenario exit %d (log %s)", res.ExitCode, res.LogPath)
	}
	healthy, failing := failingStoreTables[0], failingStoreTables[1]
	for _, v := range []string{"journal", "nojournal"} {
		t.Run(v, func(t *testing.T) {
			out := func(n string) string { return strings.TrimSpace(string(res.Outputs[v+"/"+n])) }
			if rc := out("healthy.rc"); rc != "0" {
				t.Fatalf("extract onto the healthy disk: exit %s\n%s\n%s", rc, out("healthy.json"), out("healthy.err"))
			}
			t.Logf("the failed run's stderr:\n%s\nkernel:\n%s\ne2fsck (exit %s):\n%s", out("failing.err"), out("dmesg.txt"), out("fsck.rc"), out("fsck.txt"))

			// the failed run: exit 1, each table of the failing half named
			var rep struct {
				Written int `json:"written"`
				Failed  []struct {
					Name  string `json:"name"`
					Error string `json:"error"`
				} `json:"failed"`
			}
			if err := json.Unmarshal([]byte(out("failing.json")), &rep); err != nil {
				t.Fatalf("the failed run's report: %v\n%s\nstderr: %s", err, out("failing.json"), out("failing.err"))
			}
			if rc := out("failing.rc"); rc != "1" {
				t.Errorf("extract onto a disk that fails every write: exit %s, want 1\n%s", rc, out("failing.json"))
			}
			var named []string
			for _, f := range rep.Failed {
				named = append(named, f.Name)
			}
			slices.Sort(named)
			want := slices.Sorted(slices.Values(failing))
			if !slices.Equal(named, want) || rep.Written != 0 {
				t.Errorf("the failed run wrote %d and names %q as failed, want 0 written and %q failed\n%s", rep.Written, named, want, out("failing.json"))
			}

			// none of the failing half's prefixes in the store, cached or
			// on disk; their temporary files removed, unless the journal's
			// abort made the file system read-only under the run (the
			// journal's recovery at the remount drops them)
			for _, ls := range []string{"failing.ls", "remounted.ls"} {
				entries := strings.Fields(out(ls))
				for _, f := range failing {
					if slices.Contains(entries, f+".prefix") {
						t.Errorf("%s: %s.prefix is in the store after its extract failed", ls, f)
					}
					if tmp := "." + f + ".prefix.tmp"; slices.Contains(entries, tmp) && (ls == "remounted.ls" || v == "nojournal") {
						t.Errorf("%s: %s is left in the store", ls, tmp)
					}
				}
			}

			// after the remount: the healthy half verifies, the failing
			// half is missing, nothing else
			ver := verifyReport(t, out, "verify-after")
			var missing []string
			for _, f := range ver.Findings {
				if f.Kind != "missing" {
					t.Errorf("verify --full after the remount: %s %s (%s): want only the failed half missing", f.Kind, f.Name, f.Detail)
					continue
				}
				missing = append(missing, f.Name)
			}
			slices.Sort(missing)
			if !slices.Equal(missing, want) || ver.OK != len(healthy) || out("verify-after.rc") != "1" {
				t.Errorf("verify --full after the remount: exit %s, %d ok, missing %q; want exit 1, %d ok, missing %q",
					out("verify-after.rc"), ver.OK, missing, len(healthy), want)
			}

			checkHealed(t, out)
		})
		for _, when := range []string{"manifest", "rename"} {
			t.Run("after-"+when+"-"+v, func(t *testing.T) {
				checkFailedMidRun(t, func(n string) string { return strings.TrimSpace(string(res.Outputs["after-"+when+"-"+v+"/"+n])) },
					when, len(healthy)+len(failing))
			})
		}
	}
	t.Run("reads", func(t *testing.T) {
		checkReadsFail(t, func(n string) string { return strings.TrimSpace(string(res.Outputs["reads/"+n])) }, len(healthy)+len(failing))
	})
}

// checkReadsFail checks verify of a store whose disk fails every read
// (failingStoreScript's reads phase): with and without --full, exit 1 and
// each prefix named, its finding saying the disk failed the read and
// where to look (the kernel log, the device's health), not to remove it.
func checkReadsFail(t *testing.T, out func(string) string, tables int) {
	if rc := out("extract.rc"); rc != "0" {
		t.Fatalf("extract onto the healthy disk: exit %s\n%s\n%s", rc, out("extract.json"), out("extract.err"))
	}
	t.Logf("kernel:\n%s", out("dmesg.txt"))
	for _, run := range []string{"verify", "verify-full"} {
		ver := verifyReport(t, out, run)
		named := map[string]bool{}
		for _, f := range ver.Findings {
			if f.Kind != "corrupt" || !strings.Contains(f.Detail, "input/output error") || !strings.Contains(f.Detail, "see the kernel log, dmesg, for which device") {
				t.Errorf("%s: %s %s: %s; want corrupt, the disk's I/O error and where to look", run, f.Kind, f.Name, f.Detail)
			}
			if len(named) == 0 {
				t.Logf("%s, the first finding: %s %s: %s", run, f.Kind, f.Name, f.Detail)
			}
			named[f.Name] = true
		}
		if rc := out(run + ".rc"); rc != "1" || len(named) != tables || ver.OK != 0 {
			t.Errorf("%s of a store whose disk fails every read: exit %s, %d ok, %d prefixes named; want exit 1, none ok, all %d named\n%s", run, rc, ver.OK, len(named), tables, out(run+".json"))
		}
	}
}

// checkFailedMidRun checks a run whose store's disk failed in the
// middle (failingStoreScript's after-WHEN-$v): after its first manifest
// lines were on disk, or after its first rename (before the next batch's
// syncfs: that batch's data, unless the first syncfs already wrote it
// back, goes to the failing disk).
func checkFailedMidRun(t *testing.T, out func(string) string, when string, tables int) {
	t.Logf("the failed run's stderr (exit %s):\n%s\nkernel:\n%s\ne2fsck (exit %s):\n%s", out("failing.rc"), out("failing.err"), out("dmesg.txt"), out("fsck.rc"), out("fsck.txt"))
	lines, err1 := strconv.Atoi(out("lines-at-failure"))
	renamed, err2 := strconv.Atoi(out("renamed-at-failure"))
	if err1 != nil || err2 != nil || renamed < 1 || lines >= tables || when == "manifest" && lines < 1 {
		t.Fatalf("the disk was to fail after the run's first %s and before its last: %q manifest lines and %q prefixes renamed when it failed", when, out("lines-at-failure"), out("renamed-at-failure"))
	}
	// the run fails and reports what it did: written, only the prefixes
	// it recorded before the disk failed; every other table failed. Exit
	// 3 when a prefix it had renamed could not be recorded (its directory
	// fsync or manifest lines failed: the run stops), 1 when the failure
	// showed first in the prefixes' own syncs (the kernel's writeback
	// decides which: both seen for the same script)
	var rep struct {
		Tables, Written int
		Failed          []struct{ Name, Error string }
		Error           *struct {
			ExitCode int `json:"exit_code"`
		}
	}
	if err := json.Unmarshal([]byte(out("failing.json")), &rep); err != nil {
		t.Fatalf("the failed run's report: %v\n%s", err, out("failing.json"))
	}
	rc := out("failing.rc")
	if rc != "1" && rc != "3" || rep.Error == nil || strconv.Itoa(rep.Error.ExitCode) != rc || rep.Tables != tables || rep.Written != lines || rep.Written+len(rep.Failed) != tables {
		t.Errorf("extract whose disk failed after %d of %d prefixes were renamed, %d recorded: exit %s, %d tables, %d written, %d failed; want exit 1 or 3 (with the error object), %d tables, %d written, the rest failed\n%s",
			renamed, tables, lines, rc, rep.Tables, rep.Written, len(rep.Failed), tables, lines, out("failing.json"))
	}
	// after the remount: against the manifest, exactly the prefixes
	// recorded before the disk failed verify, every other table is
	// missing or (its rename on disk, its manifest line not) unrecorded;
	// against the tables (--full), none is corrupt, truncated or of a
	// wrong length: each is correct or missing (whether a rename made
	// after the failure reaches the disk is the kernel's: it writes the
	// directory back again once the disk heals). The only other finding
	// allowed is a temporary file (a crash's leftover, which the next
	// extract removes).
	fast, full := verifyReport(t, out, "verify-fast"), verifyReport(t, out, "verify-after")
	for _, c := range []struct {
		name  string
		ver   verifyFindings
		kinds []string
	}{{"verify", fast, []string{"missing", "unrecorded"}}, {"verify --full", full, []string{"missing"}}} {
		redo := map[string]bool{}
		for _, f := range c.ver.Findings {
			switch {
			case slices.Contains(c.kinds, f.Kind):
				redo[f.Name] = true
			case f.Kind == "extra" && strings.HasSuffix(f.Path, ".prefix.tmp"):
			default:
				t.Errorf("%s after the remount: %s %s (%s: %s); want only prefixes %s, or temporary files left", c.name, f.Kind, f.Name, f.Path, f.Detail, strings.Join(c.kinds, " or "))
			}
		}
		if c.ver.OK+len(redo) != tables {
			t.Errorf("%s after the remount: %d ok and %d to extract again (%v) of %d tables\n%+v", c.name, c.ver.OK, len(redo), slices.Sorted(maps.Keys(redo)), tables, c.ver)
		}
	}
	if fast.OK != lines || full.OK < lines {
		t.Errorf("after the remount %d prefixes verify against the manifest and %d against the tables, want the %d recorded before the disk failed (and at most the other %d more against the tables)\nstore when the run failed: %s\nafter the remount: %s",
			fast.OK, full.OK, lines, tables-lines, out("failing.ls"), out("remounted.ls"))
	}
	t.Logf("of %d prefixes, %d recorded before the disk failed; after the remount %d are on disk and correct", tables, lines, full.OK)
	checkHealed(t, out)
}

// verifyFindings is the part of prefix verify's JSON report these tests
// check.
type verifyFindings struct {
	OK       int `json:"ok"`
	Findings []struct {
		Kind, Name, Path, Detail string
	} `json:"findings"`
}

// verifyReport is the report of the verify run saved as NAME.json.
func verifyReport(t *testing.T, out func(string) string, name string) verifyFindings {
	t.Helper()
	var ver verifyFindings
	if err := json.Unmarshal([]byte(out(name+".json")), &ver); err != nil {
		t.Fatalf("%s: %v\n%s\nstderr: %s", name, err, out(name+".json"), out(name+".err"))
	}
	return ver
}

// checkHealed: on the healed disk, extract again exits 0 and the whole
// store verifies with --full.
func checkHealed(t *testing.T, out func(string) string) {
	t.Helper()
	if rc := out("rerun.rc"); rc != "0" {
		t.Errorf("extract again on the healed disk: exit %s\n%s\n%s", rc, out("rerun.json"), out("rerun.err"))
	}
	if rc := out("verify-final.rc"); rc != "0" {
		t.Errorf("verify --full of the whole store after the rerun: exit %s\n%s\n%s", rc, out("verify-final.json"), out("verify-final.err"))
	}
}
