// Package shellsnap stands in for a login shell's profile (SPEC §9.1).
//
// A login shell (`bash -lc SCRIPT`) reads the user's profile before every
// script; with pyenv, nvm or conda in it that costs hundreds of
// milliseconds a call. A [Cache] runs the login shell once with a script
// of its own (the dump) that writes what the profile left behind —
// exported variables, functions, aliases, shell options and the umask —
// and writes a snapshot: a script of the shell's language that recreates
// it. Later calls run the shell without its profile, sourcing the
// snapshot instead ([Snapshot.Command]), so that the script sees what it
// would have seen after the profile:
//
//   - bash: `bash --noprofile -lc SCRIPT` with BASH_ENV naming the
//     snapshot (bash sources it before the script is parsed; a login
//     shell still, so `exit` runs ~/.bash_logout);
//   - zsh: `zsh -lc SCRIPT` as it was, with ZDOTDIR naming a directory
//     whose .zshenv turns the global startup files off and whose .zlogin
//     is the snapshot;
//   - sh: `sh -c '. SNAPSHOT; eval "shift;$1"' ARGV0 SCRIPT` (dash has no
//     file it reads before a script when not interactive).
//
// The snapshot is keyed by the shell, a scope the caller names (inside the
// sandbox or not), the directory and the whole environment the shell
// starts with. It is
// taken again when one of the startup files the caller lists changes
// (device, inode, size, modification time, or its appearing or going),
// and after a time to live. A profile that fails, does not finish in
// time, prints anything, leaves more than [MaxSize], changes directory,
// or defines a function named builtin is not snapshotted: the
// caller runs the real login shell, and the reason is logged once.
// Concurrent callers wait for one snapshot (never longer than its time
// bound) rather than each taking one.
//
// The package runs no process itself: the caller's [Runner] runs the
// shell, so it is confined and owned like every other command. It writes
// its files in a directory it is given, each with mode 0600, and removes
// them in [Cache.Close].
//
// What a snapshot does not carry: shell variables the profile sets without
// exporting them (HISTSIZE, PS1; zsh's fpath is carried), traps, zsh's
// loaded modules and named directories, and variables the caller's filter
// refuses (secrets: SPEC §10). sh cannot list its functions: a profile
// that defines one, as far as its files show, is not snapshotted.
//
// A Cache is safe for concurrent use.
package shellsnap
