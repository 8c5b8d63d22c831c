package policy

import (
	"net"
	"path/filepath"
	"slices"
	"strings"

	"go.starlark.net/starlark"
)

// networkRule parses network_rule(host, protocol, decision,
// justification?) as Codex does, so that its rules files load; execd does
// not enforce them (see NetworkRule).
func (f *File) networkRule(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var host, protocol, decision string
	var justification starlark.Value = starlark.None
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "host", &host, "protocol", &protocol, "decision", &decision,
		"justification?", &justification); err != nil {
		return nil, err
	}
	r := NetworkRule{Host: normalizeHost(host)}
	switch {
	case strings.Contains(r.Host, "*"):
		return nil, invalid("network_rule host must be a specific host; wildcards are not allowed")
	case r.Host == "":
		return nil, invalid("network_rule host cannot be empty")
	}
	switch protocol {
	case "http", "https", "socks5_tcp", "socks5_udp":
		r.Protocol = protocol
	case "http-connect":
		r.Protocol = "https"
	default:
		return nil, invalid("network_rule protocol %q is not http, https, socks5_tcp or socks5_udp", protocol)
	}
	if !slices.Contains([]string{"allow", "deny", "prompt"}, decision) {
		return nil, invalid("network_rule decision %q is not allow, deny or prompt", decision)
	}
	r.Decision = decision
	var err error
	if r.Justification, err = parseJustification(justification); err != nil {
		return nil, err
	}
	f.Network = append(f.Network, r)
	return starlark.None, nil
}

// normalizeHost lowers the case and drops spaces, a port, IPv6 brackets
// and a final dot: " EXAMPLE.com.:443 " is example.com.
func normalizeHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	return strings.TrimSuffix(strings.Trim(h, "[]"), ".")
}

// hostExecutable parses host_executable(name, paths): which absolute
// paths a rule for the bare name also covers. Parsed and validated for
// compatibility; execd matches rules against the argv as given.
func (f *File) hostExecutable(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var name string
	var paths *starlark.List
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "name", &name, "paths", &paths); err != nil {
		return nil, err
	}
	if name == "" || strings.Contains(name, "/") {
		return nil, invalid("host_executable name must be a bare executable name (got %s)", name)
	}
	list, err := strings_(paths, "host_executable paths")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range list {
		switch {
		case !filepath.IsAbs(p):
			return nil, invalid("host_executable paths must be absolute (got %s)", p)
		case filepath.Base(p) != name:
			return nil, invalid("host_executable path `%s` must have basename `%s`", p, name)
		case !slices.Contains(out, p):
			out = append(out, p)
		}
	}
	f.HostExecutables[name] = out
	return starlark.None, nil
}

// NetworkDomains returns the hosts network rules allow and deny (prompt
// rules are in neither), in order.
func NetworkDomains(rules []NetworkRule) (allowed, denied []string) {
	for _, r := range rules {
		switch r.Decision {
		case "allow":
			allowed = append(allowed, r.Host)
		case "deny":
			denied = append(denied, r.Host)
		}
	}
	return allowed, denied
}
