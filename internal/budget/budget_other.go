//go:build !linux

package budget

// Shared returns no budget: execd reads them only on Linux.
func Shared() ([]Limit, error) { return nil, nil }

// threads returns 0: unknown here, so Keep adds none.
func threads() int { return 0 }

func capNproc(int, uint64) error { return nil }

func reread(l Limit, _ int64) Limit { return l }

func systemTasks() int64 { return 0 }
