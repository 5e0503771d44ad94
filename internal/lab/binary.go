package lab

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tbhost/tbhost/internal/execx"
)

// IsStatic reports whether the ELF binary at path has no program
// interpreter, i.e. runs in the busybox guest without a libc.
func IsStatic(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	return true, nil
}

// StaticTbhost finds a static tbhost for the guest: explicit (a path the
// user gave) if set; else the running executable if it is static; else a
// fresh CGO_ENABLED=0 build into workDir when moduleDir is tbhost's
// source tree. It says how to get one when none of these works.
func StaticTbhost(ctx context.Context, runner execx.Runner, explicit, self, moduleDir, workDir string) (string, error) {
	if explicit != "" {
		ok, err := IsStatic(explicit)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("%s is dynamically linked; the lab guest has no libc for it: build it with CGO_ENABLED=0 go build ./cmd/tbhost", explicit)
		}
		return explicit, nil
	}
	if self != "" {
		if ok, err := IsStatic(self); err == nil && ok {
			return self, nil
		}
	}
	if moduleDir != "" && isTbhostModule(moduleDir) {
		out := filepath.Join(workDir, "tbhost-static")
		if err := BuildStatic(ctx, runner, moduleDir, out); err != nil {
			return "", err
		}
		return out, nil
	}
	return "", fmt.Errorf("this tbhost is dynamically linked and the guest needs a static one: run from tbhost's source tree (it is built for you), or pass --tbhost with a binary from `make build` (CGO_ENABLED=0 go build -o bin/tbhost ./cmd/tbhost)")
}

func isTbhostModule(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	return err == nil && strings.Contains(string(data), "module github.com/tbhost/tbhost\n")
}
