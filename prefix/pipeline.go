package prefix

import (
	"context"
	"io"
	"sync"
)

// The copy pipeline of extract and verify: the reader fills a chunk, writes
// it out and hands it to a digest goroutine (SHA-256 and the header checker),
// which hands it back when it has hashed it, so hashing overlaps the I/O.
const (
	digestChunk  = 1 << 20 // bytes per read and per hand-off
	digestChunks = 3       // chunks per copy: one being read, up to two being hashed
)

// chunks are the buffers of one copy: digestChunks separate allocations,
// so no chunk can ever reach into another.
type chunks [digestChunks][]byte

func newChunks() *chunks {
	var c chunks
	for i := range c {
		c[i] = make([]byte, digestChunk)
	}
	return &c
}

// chunkPool reuses chunks across files. At most one set is in use per
// running copy, so memory is bounded by the number of parallel jobs.
var chunkPool = sync.Pool{New: func() any { return newChunks() }}

// copyAndDigest copies r to out (nil: read only) while a second goroutine
// feeds the same bytes to digest, so hashing overlaps the I/O. A chunk
// belongs to exactly one side at a time: the reader owns it from the free
// list until it sends it on full; the digest goroutine owns it until it has
// written it to digest and puts it back, whole, on free. It stops early on a
// digest error or a cancelled context, and returns the bytes copied.
func copyAndDigest(ctx context.Context, out io.Writer, r io.Reader, digest io.Writer, bufs *chunks) (int64, error) {
	free := make(chan []byte, digestChunks)
	for _, b := range bufs {
		free <- b[:digestChunk:digestChunk]
	}
	full := make(chan []byte, digestChunks)
	stop := make(chan struct{}) // closed when the digest fails: stop reading
	digestErr := make(chan error, 1)
	go func() {
		var err error
		for b := range full {
			if err == nil {
				if _, err = digest.Write(b); err != nil {
					close(stop)
				}
			}
			free <- b[:cap(b)] // cap is exactly digestChunk: the chunk, nothing beyond
		}
		digestErr <- err
	}()

	n, err := feed(ctx, out, r, free, full, stop)
	close(full)
	if derr := <-digestErr; err == nil {
		err = derr
	}
	return n, err
}

// feed is the reader's side of copyAndDigest: take a free chunk, fill it,
// write it out, hand it to the digest goroutine; until EOF, an error, a
// cancelled context or a stop from the digest side (whose error the caller
// reports).
func feed(ctx context.Context, out io.Writer, r io.Reader, free <-chan []byte, full chan<- []byte, stop <-chan struct{}) (int64, error) {
	var n int64
	for {
		var b []byte
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case <-stop:
			return n, nil
		case b = <-free:
		}
		// A select picks at random among ready cases: look again, so a
		// chunk freed after the digest failed (it closes stop first) or
		// after cancellation is never read into.
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case <-stop:
			return n, nil
		default:
		}
		m, rerr := io.ReadFull(r, b)
		if m > 0 {
			if out != nil {
				if _, err := out.Write(b[:m]); err != nil {
					return n, err
				}
			}
			n += int64(m)
			full <- b[:m] // the digest goroutine owns b from here on
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}
