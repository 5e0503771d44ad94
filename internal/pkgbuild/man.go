package pkgbuild

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// ManSection is where tbhost's pages go: system administration commands.
const ManSection = 8

// ManPage is one rendered page: Name is the page name (tbhost, tbhost-lvm),
// Troff the roff source.
type ManPage struct {
	Name  string
	Troff []byte
}

// File is the page's file name in /usr/share/man/man8 (gzip-compressed).
func (p ManPage) File() string { return fmt.Sprintf("%s.%d.gz", p.Name, ManSection) }

// ManPages renders tbhost(8) from the whole command tree and one page per
// visible command group, tbhost-GROUP(8), with the group's subcommands,
// its flags and tbhost's global flags: what `man tbhost-lvm` should answer.
func ManPages(app *cli.App) ([]ManPage, error) {
	var pages []ManPage
	top, err := app.ToManWithSection(ManSection)
	if err != nil {
		return nil, fmt.Errorf("render man page tbhost(%d): %w", ManSection, err)
	}
	pages = append(pages, ManPage{Name: app.Name, Troff: []byte(top)})
	for _, c := range app.Commands {
		if c.Hidden || c.Name == "help" {
			continue
		}
		name := app.Name + "-" + c.Name
		desc := c.Description
		if c.ArgsUsage != "" || len(c.Subcommands) == 0 {
			desc = strings.TrimSpace(fmt.Sprintf("Usage: %s %s [OPTIONS] %s\n\n%s", app.Name, c.Name, c.ArgsUsage, desc))
		}
		desc += fmt.Sprintf("\n\nSee also tbhost(%d) for the global options and exit codes.", ManSection)
		group := &cli.App{
			Name:        name,
			Usage:       c.Usage,
			UsageText:   c.UsageText,
			Description: desc,
			Flags:       append(append([]cli.Flag{}, app.Flags...), c.Flags...),
			Commands:    c.Subcommands,
		}
		if group.UsageText == "" {
			group.UsageText = fmt.Sprintf("%s [GLOBAL OPTIONS] %s", app.Name, c.Name)
			if len(c.Subcommands) > 0 {
				group.UsageText += " command [COMMAND OPTIONS] [ARGUMENTS...]"
			} else {
				group.UsageText += " [OPTIONS] " + c.ArgsUsage
			}
		}
		s, err := group.ToManWithSection(ManSection)
		if err != nil {
			return nil, fmt.Errorf("render man page %s(%d): %w", name, ManSection, err)
		}
		pages = append(pages, ManPage{Name: name, Troff: []byte(s)})
	}
	return pages, nil
}

// gzipBytes compresses b the way Debian wants (-9, no name, no time), so
// the same input gives the same package.
func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	return buf.Bytes(), nil
}
