package sandbox

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/execd/execd/internal/gitrepo"
)

// node is all the planner takes from a file it looked up: its kind
// (S_IFMT bits) and which file it is. Nothing else of a stat reaches the
// plan, so nothing else needs to stay the same for the plan to.
type node struct {
	kind     uint32
	dev, ino uint64
}

func nodeOf(st *unix.Stat_t) node {
	return node{kind: st.Mode & unix.S_IFMT, dev: uint64(st.Dev), ino: st.Ino} //nolint:unconvert // Dev's type varies by architecture
}

// same is sameIDs for a node.
func (n node) same(dev, ino uint64) error {
	if n.dev != dev || n.ino != ino {
		return errReplaced
	}
	return nil
}

// lookups makes the planner's lookups in the filesystem. The plan is a
// function of their answers alone (and of the policy): the same answers
// make the same plan. With memory (newLookups, for execd's own plans)
// each lookup is made once per plan and a repeated one answered from
// memory: a plan walks each protected path from /, and looks up the
// directories above an entry again, so that most of its lookups are
// repeats; and each path then has one answer in the plan, even when the
// file changes while execd plans.
type lookups struct {
	seen map[lookup]answer // nil: no memory, every lookup goes to the kernel
}

func newLookups() *lookups { return &lookups{seen: map[lookup]answer{}} }

type lookupOp uint8

const (
	opLstat      lookupOp = iota // lstat(2)
	opStat                       // stat(2): links followed
	opReadlink                   // readlink(2)
	opSubmodules                 // gitrepo.Submodules of a directory
	opGitfile                    // gitrepo.ReadPointer with the prefix "gitdir: "
	opCommondir                  // gitrepo.ReadPointer with no prefix
)

type lookup struct {
	op   lookupOp
	path string
}

// answer is a lookup's answer, as far as the planner uses it: the error,
// the node found, and what was read (a link's target, a pointer's path,
// the submodule paths).
type answer struct {
	lookup
	err  error
	node node
	text string
	list []string
}

// do makes c, or answers it from memory.
func (lk *lookups) do(c lookup) answer {
	if a, ok := lk.seen[c]; ok {
		return a
	}
	a := c.make()
	if lk.seen != nil {
		lk.seen[c] = a
	}
	return a
}

// make makes the lookup.
func (c lookup) make() answer {
	a := answer{lookup: c}
	switch c.op {
	case opLstat, opStat:
		var st unix.Stat_t
		if c.op == opLstat {
			a.err = unix.Lstat(c.path, &st)
		} else {
			a.err = unix.Stat(c.path, &st)
		}
		if a.err == nil {
			a.node = nodeOf(&st)
		}
	case opReadlink:
		a.text, a.err = os.Readlink(c.path)
	case opSubmodules:
		a.list, a.err = gitrepo.Submodules(c.path)
	case opGitfile:
		a.text, a.err = gitrepo.ReadPointer(c.path, "gitdir: ")
	case opCommondir:
		a.text, a.err = gitrepo.ReadPointer(c.path, "")
	}
	return a
}

func (lk *lookups) lstat(path string) (node, error) {
	a := lk.do(lookup{opLstat, path})
	return a.node, a.err
}

func (lk *lookups) stat(path string) (node, error) {
	a := lk.do(lookup{opStat, path})
	return a.node, a.err
}

func (lk *lookups) readlink(path string) (string, error) {
	a := lk.do(lookup{opReadlink, path})
	return a.text, a.err
}

// submodules is gitrepo.Submodules.
func (lk *lookups) submodules(dir string) ([]string, error) {
	a := lk.do(lookup{opSubmodules, dir})
	return a.list, a.err
}

// readPointer is gitrepo.ReadPointer with the prefix of a gitfile or of
// a commondir file.
func (lk *lookups) readPointer(path string, gitfile bool) (string, error) {
	op := opCommondir
	if gitfile {
		op = opGitfile
	}
	a := lk.do(lookup{op, path})
	return a.text, a.err
}

// isRegular reports whether path leads to a regular file.
func (lk *lookups) isRegular(path string) bool {
	n, err := lk.stat(path)
	return err == nil && n.kind == unix.S_IFREG
}
