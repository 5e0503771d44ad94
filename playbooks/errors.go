package playbooks

import (
	"fmt"
	"sort"
	"strings"
)

// Error is a problem at a position in a playbook file.
type Error struct {
	File string
	Pos  Pos
	Msg  string
}

func (e *Error) Error() string {
	switch {
	case e.Pos.Line > 0 && e.Pos.Column > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Pos.Line, e.Pos.Column, e.Msg)
	case e.Pos.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Pos.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// ErrorList is every problem found in one playbook, in file order.
type ErrorList []*Error

func (l *ErrorList) Error() string {
	parts := make([]string, len(*l))
	for i, e := range *l {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

func (l *ErrorList) sort() {
	sort.SliceStable(*l, func(i, j int) bool {
		a, b := (*l)[i].Pos, (*l)[j].Pos
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
}

// UnknownCommandError is returned by a CommandSet for argv that names no
// tbhost command of this build.
type UnknownCommandError struct {
	Argv []string
	Msg  string
}

func (e *UnknownCommandError) Error() string { return e.Msg }
