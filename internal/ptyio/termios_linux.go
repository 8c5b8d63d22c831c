package ptyio

import "golang.org/x/sys/unix"

// getTermios is the ioctl that reads terminal settings.
const getTermios = unix.TCGETS
