// Package delta encodes a binary for the wire and decodes it on the node:
// zstd compression (Compress, Decompress) and a patch against the file
// the node already has (Diff, Apply), plus the local store of what swdt
// last put on a node, which a patch needs as its reference (Store).
//
// Every encoder streams: memory stays bounded whatever the file's size
// (a patch's index of the reference is the one part that grows with it,
// 8 bytes per 32 bytes of reference, capped at 64 MiB). Nothing here
// verifies the result: the node hashes what it decoded and swdt compares
// the SHA-256 with the source's, so a corrupted, truncated or misapplied
// encoding can never be mistaken for the file.
//
// Why not zstd's own patch-from (a raw dictionary holding the old file)?
// The zstd library swdt uses finds matches in a dictionary of tens of MB
// only at its slowest level (about 6 MB/s here, slower than the links it
// is meant to save time on), and holds a copy of the dictionary in its
// window. Diff finds the matches itself (an index of the reference,
// byte-exact extension and zstd's repeat-offset idea) and zstd-compresses
// the resulting copy/insert stream.
package delta
