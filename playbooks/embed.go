package playbooks

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

//go:embed embedded/*.yaml
var embeddedFS embed.FS

// EmbeddedNames lists the playbooks built into tbhost.
func EmbeddedNames() []string {
	entries, _ := fs.ReadDir(embeddedFS, "embedded")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// Embedded parses the built-in playbook name.
func Embedded(name string) (*Playbook, error) {
	src, err := embeddedFS.ReadFile(path.Join("embedded", name+".yaml"))
	if err != nil {
		return nil, fmt.Errorf("no built-in playbook %q (built in: %s)", name, strings.Join(EmbeddedNames(), ", "))
	}
	return Parse("embedded:"+name, src)
}
