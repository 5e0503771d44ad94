package monitortest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// WriteMD writes at root a host with one md array md0 over partitions
// (members "sda1:in_sync", "sdb1:spare", ...: the partition and its
// md/dev-X/state), laid out as the kernel does: sys/block/md0/slaves/sda1
// -> ../../sda/sda1, sys/block/sda/sda1/partition, md0's md/ attributes
// from attrs (a missing key: no such file, as the kernel gives raid0 and
// linear no md/degraded), and a read load of 100 reads/s on every member
// (proc/diskstats.0 and .1, 5 s apart). DERIVED, not captured.
func WriteMD(root string, members []string, attrs map[string]string) error {
	w := func(p, s string) error {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, []byte(s), 0o644)
	}
	var stats [2]strings.Builder
	for i, m := range members {
		name, state, _ := strings.Cut(m, ":")
		disk := strings.TrimRight(name, "0123456789")
		if disk == "" || disk == name {
			return fmt.Errorf("md member %q: want a partition such as sda1", m)
		}
		if err := w("sys/block/"+disk+"/"+name+"/partition", "1\n"); err != nil {
			return err
		}
		link := filepath.Join(root, "sys/block/md0/slaves", name)
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return err
		}
		if err := os.Symlink("../../"+disk+"/"+name, link); err != nil {
			return err
		}
		if err := w("sys/block/md0/md/dev-"+name+"/state", state+"\n"); err != nil {
			return err
		}
		for s := range stats {
			reads := 1000 + s*500
			fmt.Fprintf(&stats[s], "   8 %d %s %d 0 %d %d 0 0 0 0 0 %d %d 0 0 0 0 0 0\n", 16*i+1, name, reads, reads*8, reads*4, reads*4, reads*4)
		}
	}
	for k, v := range attrs {
		if err := w("sys/block/md0/md/"+k, v+"\n"); err != nil {
			return err
		}
	}
	for s := range stats {
		if err := w(fmt.Sprintf("proc/diskstats.%d", s), stats[s].String()); err != nil {
			return err
		}
	}
	return nil
}
