//go:build !linux

package ptyio

import "golang.org/x/sys/unix"

// getTermios is the ioctl that reads terminal settings (BSD, macOS).
const getTermios = unix.TIOCGETA
