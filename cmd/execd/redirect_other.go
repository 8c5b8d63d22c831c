//go:build !linux

package main

import "golang.org/x/sys/unix"

// redirect makes fd newfd a copy of oldfd.
func redirect(oldfd, newfd int) error { return unix.Dup2(oldfd, newfd) }
