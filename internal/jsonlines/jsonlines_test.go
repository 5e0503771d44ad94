package jsonlines

import (
	"os"
	"path/filepath"
	"testing"
)

func TestTornTail(t *testing.T) {
	for _, c := range []struct {
		content string
		torn    bool
	}{
		{"", false},
		{"{\"a\":1}\n", false},
		{"{\"a\":1}\n{\"b\"", true},
		{"x", true},
	} {
		p := filepath.Join(t.TempDir(), "log.jsonl")
		if err := os.WriteFile(p, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		size, torn, err := TornTail(f)
		f.Close()
		if err != nil || size != int64(len(c.content)) || torn != c.torn {
			t.Errorf("%q: size %d torn %v err %v; want %d %v", c.content, size, torn, err, len(c.content), c.torn)
		}
	}
	// a file open for writing only cannot be read: the error names it
	f, err := os.OpenFile(filepath.Join(t.TempDir(), "w"), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("x")
	if _, _, err := TornTail(f); err == nil {
		t.Error("a write-only file: no error")
	}
}
