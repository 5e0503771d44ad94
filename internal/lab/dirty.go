package lab

// DIRTY requests (lab_dirty in lib.sh): qemu's dirty bitmaps prove that a
// step wrote nothing to the guest's disks without reading them. "MARK
// DIRTY ID start NAME..." gives each named drive a fresh bitmap (qemu's
// block-dirty-bitmap-add), which marks every block the guest writes from
// then on, whatever it writes; "MARK DIRTY ID count NAME..." answers
// "NAME=BYTES..." with the bytes each bitmap holds (query-block). Hashing
// ten 256 MiB disks twice inside the TCG guest took ~3 minutes a boot; a
// bitmap costs nothing and also catches a write of the bytes already
// there. The guest syncs before counting: a write still in its page
// cache has not reached qemu.

import (
	"encoding/json"
	"fmt"
	"strings"
)

// dirtyBitmap is the bitmap's name on every drive.
const dirtyBitmap = "lab"

// DirtyRequest is one parsed DIRTY request.
type DirtyRequest struct {
	ID    string
	Op    string // start or count
	Disks []string
}

// parseDirty parses the part of a console line after "MARK DIRTY ".
// known holds the run's disk names.
func parseDirty(rest string, known map[string]bool) (DirtyRequest, error) {
	f := strings.Fields(rest)
	if len(f) < 3 {
		return DirtyRequest{}, fmt.Errorf("dirty request %q: want ID start|count DISK...", rest)
	}
	r := DirtyRequest{ID: f[0], Op: f[1], Disks: f[2:]}
	if !validName(strings.ReplaceAll(r.ID, ".", "_")) {
		return r, fmt.Errorf("dirty request %q: bad id", rest)
	}
	if r.Op != "start" && r.Op != "count" {
		return r, fmt.Errorf("dirty request %q: %q: want start or count", rest, r.Op)
	}
	for _, d := range r.Disks {
		if !known[d] {
			return r, fmt.Errorf("dirty request %q: no disk %q in this run", rest, d)
		}
	}
	return r, nil
}

// dirtyHandler parses a DIRTY request for the run's disks and carries it
// out with do.
func dirtyHandler(disks []Disk, do func(DirtyRequest) (string, error)) requestHandler {
	known := diskNames(disks)
	return func(rest string) (string, string, error) {
		req, err := parseDirty(rest, known)
		if err != nil {
			return req.ID, "", err
		}
		reply, err := do(req)
		return req.ID, reply, err
	}
}

// dirty carries out a DIRTY request: start replaces each drive's bitmap
// with an empty one; count answers "NAME=BYTES ..." in the request's order.
func (q *qmpHost) dirty(r DirtyRequest) (string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	c, err := q.client()
	if err != nil {
		return "", err
	}
	if r.Op == "start" {
		for _, d := range r.Disks {
			// a bitmap of an earlier start goes first; none is no error
			c.execute("block-dirty-bitmap-remove", map[string]any{"node": d, "name": dirtyBitmap})
			if err := c.execute("block-dirty-bitmap-add", map[string]any{"node": d, "name": dirtyBitmap}); err != nil {
				return "", fmt.Errorf("%s: %w", d, err)
			}
		}
		return "", nil
	}
	ret, err := c.call("query-block", nil)
	if err != nil {
		return "", err
	}
	counts, err := dirtyCounts(ret)
	if err != nil {
		return "", err
	}
	out := make([]string, 0, len(r.Disks))
	for _, d := range r.Disks {
		n, ok := counts[d]
		if !ok {
			return "", fmt.Errorf("%s: no dirty bitmap %q (lab_dirty start first)", d, dirtyBitmap)
		}
		out = append(out, fmt.Sprintf("%s=%d", d, n))
	}
	return strings.Join(out, " "), nil
}

// dirtyCounts reads query-block's reply: the bytes marked in each drive's
// bitmap named dirtyBitmap, by drive. qemu 4.2+ lists a drive's bitmaps
// under "inserted"; older ones beside it (both are read).
func dirtyCounts(ret json.RawMessage) (map[string]int64, error) {
	type bitmap struct {
		Name  string `json:"name"`
		Count *int64 `json:"count"`
	}
	var devs []struct {
		Device   string   `json:"device"`
		Bitmaps  []bitmap `json:"dirty-bitmaps"`
		Inserted *struct {
			Bitmaps []bitmap `json:"dirty-bitmaps"`
		} `json:"inserted"`
	}
	if err := json.Unmarshal(ret, &devs); err != nil {
		return nil, fmt.Errorf("qmp query-block reply: %w", err)
	}
	counts := map[string]int64{}
	for _, d := range devs {
		bms := d.Bitmaps
		if d.Inserted != nil {
			bms = append(bms, d.Inserted.Bitmaps...)
		}
		for _, b := range bms {
			if b.Name != dirtyBitmap {
				continue
			}
			if b.Count == nil {
				return nil, fmt.Errorf("qmp query-block: drive %s: bitmap %q without a count", d.Device, b.Name)
			}
			counts[d.Device] = *b.Count
		}
	}
	return counts, nil
}
