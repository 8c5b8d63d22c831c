package sandbox

import (
	"errors"
	"os"
	"slices"

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
// file changes while execd plans. The lookups are kept in the order the
// planner first asked for them, with their answers, for still.
type lookups struct {
	seen map[lookup]int // index in done; nil: no memory, every lookup goes to the kernel
	done []answer
}

func newLookups() *lookups { return &lookups{seen: map[lookup]int{}} }

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

// answer is a lookup's answer: the error, the node found, and what was
// read (a link's target, a pointer's path, the submodule paths). The
// planner uses no more of it than same compares.
type answer struct {
	lookup
	err  error
	node node
	text string
	list []string
}

// do makes c, or answers it from memory.
func (lk *lookups) do(c lookup) answer {
	if i, ok := lk.seen[c]; ok {
		return lk.done[i]
	}
	a := c.make()
	if lk.seen != nil {
		lk.seen[c] = len(lk.done)
		lk.done = append(lk.done, a)
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

// still reports whether every lookup made, made again in the same order,
// gets the same answer; it stops at the first that does not. When all
// do, the planner asking now would ask the same, in the same order, and
// make the same plan: each lookup it makes is chosen by the policy and
// the answers before it. Nothing is inferred from times: a file's
// content is read again, for a write through a shared mapping whose page
// is dirty already changes it without changing its size, mtime or ctime.
func (lk *lookups) still() bool {
	for i := range lk.done {
		was := &lk.done[i]
		if now := was.make(); !was.same(&now) {
			return false
		}
	}
	return true
}

// same reports whether the planner takes a and b for the same answer:
// the same errno, or none, or another error (it looks for errnos only);
// the same node; and the same text or paths read.
func (a *answer) same(b *answer) bool {
	return errnoOf(a.err) == errnoOf(b.err) && (a.err == nil) == (b.err == nil) &&
		a.node == b.node && a.text == b.text && slices.Equal(a.list, b.list)
}

func errnoOf(err error) unix.Errno {
	var errno unix.Errno
	_ = errors.As(err, &errno)
	return errno
}
