// tlog-go: an independent check of a modsign transparency log directory
// with Go's golang.org/x/mod/sumdb/note and sumdb/tlog (Debian's
// golang-golang-x-mod-dev; built offline with GO111MODULE=off
// GOPATH=/usr/share/gocode).
//
//	tlog-go DIR VKEY [OLD_CHECKPOINT|-] [PROOFS]
//
// Opens DIR/checkpoint with VKEY (note.Open), recomputes the tree from the
// entry bundles with tlog.StoredHashes, compares tlog.TreeHash with the
// checkpoint and every tile file with tlog.ReadTileData, proves and checks
// each record's inclusion (ProveRecord/CheckRecord) and, given an older
// checkpoint, its consistency (ProveTree/CheckTree); and checks the
// proofs that modsign-client log verify --proofs wrote (lines "inclusion
// INDEX SIZE HASH..." and "consistency OLD SIZE HASH...", base64) with
// CheckRecord and CheckTree.  Prints "OK N" (and "proofs OK K") or one
// line naming the first disagreement, and exits 1.
package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type hashes []tlog.Hash

func (h hashes) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	for i, x := range idx {
		if x < 0 || x >= int64(len(h)) {
			return nil, fmt.Errorf("hash %d not stored", x)
		}
		out[i] = h[x]
	}
	return out, nil
}

func die(format string, a ...interface{}) {
	fmt.Printf("FAIL "+format+"\n", a...)
	os.Exit(1)
}

// C2SP drops Go's tile height and calls the data level "entries".
func c2spPath(t tlog.Tile) string {
	p := strings.TrimPrefix(t.Path(), "tile/8/")
	return "tile/" + strings.Replace(p, "data/", "entries/", 1)
}

func parseCheckpoint(text string) (string, int64, tlog.Hash) {
	lines := strings.Split(text, "\n")
	if len(lines) < 4 {
		die("checkpoint: too short")
	}
	n, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		die("checkpoint size: %v", err)
	}
	raw, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(raw) != tlog.HashSize {
		die("checkpoint root: %v", err)
	}
	var h tlog.Hash
	copy(h[:], raw)
	return lines[0], n, h
}

func openNote(path, vkey string) *note.Note {
	msg, err := os.ReadFile(path)
	if err != nil {
		die("%v", err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		die("vkey: %v", err)
	}
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		die("%s: %v", path, err)
	}
	return n
}

func readEntries(dir string, size int64) [][]byte {
	var out [][]byte
	for i := int64(0); i*256 < size; i++ {
		w := int(size - i*256)
		if w > 256 {
			w = 256
		}
		t := tlog.Tile{H: 8, L: -1, N: i, W: w}
		data, err := os.ReadFile(filepath.Join(dir, c2spPath(t)))
		if err != nil {
			die("%v", err)
		}
		for len(data) > 0 {
			if len(data) < 2 {
				die("%s: cut short", c2spPath(t))
			}
			l := int(data[0])<<8 | int(data[1])
			if len(data) < 2+l {
				die("%s: cut short", c2spPath(t))
			}
			out = append(out, data[2:2+l])
			data = data[2+l:]
		}
	}
	if int64(len(out)) != size {
		die("%d entries for a tree of %d", len(out), size)
	}
	return out
}

// The tiles a tree of size has now: every full tile and the last partial
// one of each level (tlog.NewTiles(8, 0, size) also names every partial
// width on the way, which a log need not keep).
func currentTiles(size int64) []tlog.Tile {
	var out []tlog.Tile
	for l := 0; size>>(8*l) > 0; l++ {
		full := size >> (8 * (l + 1))
		for n := int64(0); n < full; n++ {
			out = append(out, tlog.Tile{H: 8, L: l, N: n, W: 256})
		}
		if w := int((size >> (8 * l)) & 255); w > 0 {
			out = append(out, tlog.Tile{H: 8, L: l, N: full, W: w})
		}
	}
	return out
}

func main() {
	if len(os.Args) < 3 {
		die("usage: tlog-go DIR VKEY [OLD_CHECKPOINT]")
	}
	dir, vkey := os.Args[1], os.Args[2]
	n := openNote(filepath.Join(dir, "checkpoint"), vkey)
	_, size, root := parseCheckpoint(n.Text)

	var stored hashes
	for i, e := range readEntries(dir, size) {
		h, err := tlog.StoredHashes(int64(i), e, stored)
		if err != nil {
			die("%v", err)
		}
		stored = append(stored, h...)
	}
	th, err := tlog.TreeHash(size, stored)
	if err != nil || th != root {
		die("tree hash %v differs from the checkpoint's %v (%v)", th, root, err)
	}
	for _, t := range currentTiles(size) {
		want, err := tlog.ReadTileData(t, stored)
		if err != nil {
			die("%v", err)
		}
		got, err := os.ReadFile(filepath.Join(dir, c2spPath(t)))
		if err != nil {
			die("%v", err)
		}
		if !bytes.Equal(got, want) {
			die("%s differs from Go's tile", c2spPath(t))
		}
	}
	for i := int64(0); i < size; i++ {
		p, err := tlog.ProveRecord(size, i, stored)
		if err == nil {
			err = tlog.CheckRecord(p, size, th, i, stored[tlog.StoredHashIndex(0, i)])
		}
		if err != nil {
			die("record %d: %v", i, err)
		}
	}
	if len(os.Args) > 3 && os.Args[3] != "-" {
		old := openNote(os.Args[3], vkey)
		_, osize, oroot := parseCheckpoint(old.Text)
		if osize > size {
			die("old checkpoint is larger (%d > %d): rolled back", osize, size)
		}
		p, err := tlog.ProveTree(size, osize, stored)
		if err == nil {
			err = tlog.CheckTree(p, size, th, osize, oroot)
		}
		if err != nil {
			die("consistency %d -> %d: %v", osize, size, err)
		}
	}
	fmt.Printf("OK %d\n", size)
	if len(os.Args) > 4 {
		fmt.Printf("proofs OK %d\n", checkProofs(os.Args[4], stored, size))
	}
}

func checkProofs(path string, stored hashes, size int64) int {
	data, err := os.ReadFile(path)
	if err != nil {
		die("%v", err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			die("proofs: bad line %q", line)
		}
		a, err1 := strconv.ParseInt(f[1], 10, 64)
		b, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || b > size {
			die("proofs: bad line %q", line)
		}
		var p []tlog.Hash
		for _, s := range f[3:] {
			raw, err := base64.StdEncoding.DecodeString(s)
			if err != nil || len(raw) != tlog.HashSize {
				die("proofs: bad hash in %q", line)
			}
			var h tlog.Hash
			copy(h[:], raw)
			p = append(p, h)
		}
		th, err := tlog.TreeHash(b, stored)
		if err != nil {
			die("%v", err)
		}
		switch f[0] {
		case "inclusion":
			err = tlog.CheckRecord(p, b, th, a, stored[tlog.StoredHashIndex(0, a)])
		case "consistency":
			var oh tlog.Hash
			if oh, err = tlog.TreeHash(a, stored); err == nil {
				err = tlog.CheckTree(p, b, th, a, oh)
			}
		default:
			die("proofs: bad line %q", line)
		}
		if err != nil {
			die("our %s proof %d/%d: %v", f[0], a, b, err)
		}
		n++
	}
	return n
}
