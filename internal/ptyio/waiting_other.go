//go:build !linux

package ptyio

func haveChildFiles() bool { return false }

// WaitingForInput cannot be answered without Linux's /proc: it reports
// false, and callers wait their full time.
func (p *Pty) WaitingForInput(leader int) bool { return false }
