package prefix_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/tbhost/tbhost/prefix"
	"github.com/tbhost/tbhost/prefix/prefixtest"
)

// A Go tablebase server opens each table through the store and hands the
// io.ReaderAt to its probing code: sparse-index and block-length reads come
// from NVMe, data blocks from the HDD file.
func ExampleOpen() {
	tables, _ := os.MkdirTemp("", "tables")
	store, _ := os.MkdirTemp("", "store")
	defer os.RemoveAll(tables)
	defer os.RemoveAll(store)
	path, _, err := prefixtest.WriteTable(tables, prefixtest.Spec{Name: "KRvK.rtbw"})
	if err != nil {
		log.Fatal(err)
	}
	// What `tbhost prefix extract --tables DIR --store DIR` does:
	layout, err := prefix.ParseFile(path)
	if err != nil {
		log.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	os.WriteFile(filepath.Join(store, "KRvK.rtbw.prefix"), b[:layout.Prefix], 0o644)

	r, err := prefix.Open(path, store)
	if err != nil {
		log.Fatal(err) // missing (prefix.ErrNoPrefix), truncated, foreign or stale prefix
	}
	defer r.Close()
	p := make([]byte, 32)
	if _, err := r.ReadAt(p, layout.BlockLengths.Offset); err != nil { // served from the prefix file
		log.Fatal(err)
	}
	fmt.Println(r.PrefixLen() == layout.Prefix, layout.Prefix%64)
	// Output: true 0
}
