// Package procstore keeps what interactive sessions need across calls:
// the table of live sessions ([Store]: ids, least-recently-used order,
// the choice of the session to evict) and the bounded output buffer of
// each session ([HeadTail]).
//
// It knows nothing of processes: the orchestrator stores its sessions
// here, kills what [Store.Insert] evicts, and decides when a session is
// over. Both types are safe for concurrent use.
package procstore
