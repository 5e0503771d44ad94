// Command mkdeb builds tbhost's Debian package (make deb) with nfpm as a
// library, and prints the version and commit the Makefile stamps into the
// binary:
//
//	mkdeb version                  the Debian version, from git describe
//	mkdeb commit                   the commit (12 hex digits)
//	mkdeb build --binary bin/tbhost --out dist
//
// The binary must already carry the same version (make build does it);
// build refuses one that prints another.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tbhost/tbhost/internal/cliutil"
	"github.com/tbhost/tbhost/internal/execx"
	"github.com/tbhost/tbhost/internal/pkgbuild"
	"github.com/tbhost/tbhost/internal/tbhostapp"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

const usage = "usage: mkdeb version | mkdeb commit | mkdeb build --binary FILE [--out DIR] [--source DIR]"

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	r := execx.Exec{Timeout: time.Minute}
	switch args[0] {
	case "version", "commit":
		v, c, _, err := pkgbuild.GitVersion(ctx, r, ".")
		if err != nil {
			fmt.Fprintf(stderr, "mkdeb: %v; using %s\n", err, v)
		}
		if args[0] == "version" {
			fmt.Fprintln(stdout, v)
		} else {
			fmt.Fprintln(stdout, c)
		}
		return 0
	case "build":
		fs := flag.NewFlagSet("mkdeb build", flag.ContinueOnError)
		fs.SetOutput(stderr)
		binary := fs.String("binary", "bin/tbhost", "the static tbhost `FILE` (make build)")
		out := fs.String("out", "dist", "write the package into `DIR`")
		source := fs.String("source", ".", "the repository root `DIR`")
		if err := fs.Parse(args[1:]); err != nil {
			return 2
		}
		path, err := build(ctx, r, *binary, *out, *source)
		if err != nil {
			fmt.Fprintf(stderr, "mkdeb: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, path)
		return 0
	default:
		fmt.Fprintln(stderr, usage)
		return 2
	}
}

func build(ctx context.Context, r execx.Runner, binary, out, source string) (string, error) {
	version, commit, date, err := pkgbuild.GitVersion(ctx, r, source)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mkdeb: %v; using %s\n", err, version)
		date = time.Unix(0, 0).UTC()
		if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
			var sec int64
			if _, err := fmt.Sscanf(s, "%d", &sec); err == nil {
				date = time.Unix(sec, 0).UTC()
			}
		}
	}
	// the binary must say the version the package has
	abs, err := filepath.Abs(binary)
	if err != nil {
		return "", err
	}
	res, err := r.Run(ctx, abs, "--version")
	if err != nil {
		return "", fmt.Errorf("run %s --version: %w", binary, err)
	}
	want := "tbhost version " + tbhostapp.Build{Version: version, Commit: commit}.String()
	if got := strings.TrimSpace(string(res.Stdout)); got != want {
		return "", fmt.Errorf("%s prints %q, the package would be %q: rebuild it with make build", binary, got, want)
	}
	staging, err := os.MkdirTemp("", "mkdeb-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(staging)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", fmt.Errorf("output directory: %w", err)
	}
	path := filepath.Join(out, pkgbuild.FileName(version))
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return "", fmt.Errorf("create %s: %w", tmp, err)
	}
	spec := pkgbuild.Spec{
		Version: version, Commit: commit, Date: date,
		Binary: binary, Source: source, Staging: staging,
		App: tbhostapp.New(&cliutil.Env{}, tbhostapp.Build{Version: version, Commit: commit}),
	}
	err = pkgbuild.Build(spec, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", errors.Join(err, os.Remove(tmp))
	}
	return path, nil
}
