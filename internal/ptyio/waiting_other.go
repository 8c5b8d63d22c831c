//go:build !linux

package ptyio

func haveChildFiles() bool { return false }

// ForegroundWait cannot be answered without Linux's /proc: it reports
// NotWaiting, and callers wait their full time.
func (p *Pty) ForegroundWait(leader int) Wait { return NotWaiting }

// WaitingForInput cannot be answered without Linux's /proc: it reports
// false, and callers wait their full time.
func (p *Pty) WaitingForInput(leader int) bool { return false }

// InputMark is empty without Linux's /proc.
type InputMark struct{}

// MarkInput records nothing without Linux's /proc.
func (p *Pty) MarkInput(leader, n int) InputMark { return InputMark{} }

// Consumed cannot be told without Linux's /proc; since WaitingForInput
// already answers false there, it answers true.
func (p *Pty) Consumed(m InputMark, outputSince bool) bool { return true }

// InputPending reports true: it cannot be told without Linux's /proc.
func (p *Pty) InputPending() bool { return true }

// OutputPending reports false: without Linux's /proc no early answer is
// given anyway.
func (p *Pty) OutputPending() bool { return false }
