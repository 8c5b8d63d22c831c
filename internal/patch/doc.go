// Package patch parses and applies the patch format of SPEC §6: a list of
// file additions, deletions and updates, each update made of chunks that
// are located by their context lines rather than by line numbers.
//
// The contract:
//   - [Parse] accepts the format of §6.1 with its tolerated variants and
//     reports a bad patch with the messages of §6.5, naming the line.
//   - [Prepare] reads every file the patch touches and locates every chunk
//     (§6.2) before anything is written, so a patch that cannot apply
//     changes nothing. It follows symlinks to the files they name and
//     reports each target by its real path, for the caller to check
//     against the writable roots (§7.6).
//   - [Plan.Commit] writes each file through a temporary file renamed into
//     place in the same directory, keeping mode bits, and never follows a
//     symlink that appeared after Prepare resolved the paths. If a write
//     fails midway, the files already written are restored.
//   - [Recognize] and [RecognizeScript] tell whether a shell call is really
//     a patch (§6.4).
//
// It knows nothing of approvals, sandboxes or the protocol.
package patch
