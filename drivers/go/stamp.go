package main

import "encoding/binary"

// Stamps: a payload of stampSize bytes or more starts with the message's
// sequence number and its publisher's index, each a little-endian uint64.

// putStamp writes the stamp into a payload of at least stampSize bytes.
func putStamp(p []byte, seq uint64, pub int) {
	binary.LittleEndian.PutUint64(p[0:8], seq)
	binary.LittleEndian.PutUint64(p[8:16], uint64(pub))
}

// readStamp reads a stamp; ok is false for payloads too short to carry one.
func readStamp(p []byte) (seq uint64, pub uint64, ok bool) {
	if len(p) < stampSize {
		return 0, 0, false
	}
	return binary.LittleEndian.Uint64(p[0:8]), binary.LittleEndian.Uint64(p[8:16]), true
}
