//go:build !linux

package sandbox

// Planned returns what stays read-only for the protected names of each
// root that is not shared and for submodules, all of which are kept
// (ProtectedPaths: no budgets bound them here).
func Planned(roots []Root, names, submodules []string) (kept, readOnly []string, err error) {
	var private []string
	for _, r := range roots {
		if !r.Shared {
			private = append(private, r.Path)
		}
	}
	return submodules, ProtectedPaths(private, names, submodules), nil
}
