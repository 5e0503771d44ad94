package lab

import (
	"context"
	"fmt"
	"time"

	"github.com/tbhost/tbhost/internal/execx"
)

// BuildStatic builds a static tbhost (CGO_ENABLED=0) from the module at
// moduleDir into out, for the busybox guest.
func BuildStatic(ctx context.Context, runner execx.Runner, moduleDir, out string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if _, err := runner.Run(ctx, staticBuildArgv(moduleDir, out)...); err != nil {
		return fmt.Errorf("build static tbhost: %w", err)
	}
	return nil
}

func staticBuildArgv(moduleDir, out string) []string {
	return []string{"env", "-C", moduleDir, "CGO_ENABLED=0", "go", "build", "-trimpath", "-o", out, "./cmd/tbhost"}
}
