//go:build !linux

package ptyio

import (
	"errors"
	"os"
)

// peer is Linux's: elsewhere terminals are made by Open only.
func peer(*os.File) (*os.File, error) { return nil, errors.ErrUnsupported }
