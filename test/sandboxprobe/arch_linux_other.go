//go:build linux && !amd64

package main

import "errors"

var errNoCompat = errors.New("no 32-bit or x32 calls on this architecture")

func i386Socket() error { return errNoCompat }
func x32Socket() error  { return errNoCompat }
