package cliutil

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"
)

// SignalContext is the command's context, cancelled by SIGINT (Ctrl-C) or
// SIGTERM so long runs checkpoint, kill what they started and stop cleanly.
// Call the CancelFunc when the command ends: it stops catching the signals.
func SignalContext(c *cli.Context) (context.Context, context.CancelFunc) {
	parent := context.Background()
	if c != nil && c.Context != nil {
		parent = c.Context
	}
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}
