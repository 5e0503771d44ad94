package lab

import (
	"bufio"
	"bytes"
	"strings"
)

// lddLibs parses ldd output into the resolved library paths (including the
// dynamic loader) and the names ldd could not find.
func lddLibs(out []byte) (paths, notFound []string) {
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasSuffix(line, ":") { // "file:" header when several files
			continue
		}
		if name, rest, ok := strings.Cut(line, "=>"); ok {
			rest = strings.TrimSpace(rest)
			if strings.HasPrefix(rest, "not found") {
				notFound = append(notFound, strings.TrimSpace(name))
				continue
			}
			p, _, _ := strings.Cut(rest, " ")
			if strings.HasPrefix(p, "/") && !seen[p] {
				seen[p] = true
				paths = append(paths, p)
			}
			continue
		}
		// "/lib64/ld-linux-x86-64.so.2 (0x...)" or "linux-vdso.so.1 (0x...)"
		p, _, _ := strings.Cut(line, " ")
		if strings.HasPrefix(p, "/") && !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	return paths, notFound
}
