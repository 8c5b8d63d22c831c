package main

import "golang.org/x/sys/unix"

// redirect makes fd newfd a copy of oldfd (Linux has dup3, and no dup2 on
// some architectures).
func redirect(oldfd, newfd int) error { return unix.Dup3(oldfd, newfd, 0) }
