package hotswap

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"sigs.k8s.io/swdt/pkg/delta"
)

// An index kept for a destination serves patches against its copy, which
// apply; keeping another digest for the destination drops it, and a
// digest the store has no copy of yields no index (the patch is then
// made from the copy as before).
func TestIndexesKeptBetweenRuns(t *testing.T) {
	store := &delta.Store{Dir: t.TempDir()}
	put := func(b []byte) string {
		sum := sha256.Sum256(b)
		d := hex.EncodeToString(sum[:])
		if err := store.Put(d, bytes.NewReader(b), int64(len(b))); err != nil {
			t.Fatal(err)
		}
		return d
	}
	v1 := bytes.Repeat([]byte("kubelet build one "), 4096)
	v2 := append(bytes.Clone(v1), " and a rebuilt function"...)
	d1, d2 := put(v1), put(v2)
	ctx := context.Background()
	c := NewIndexes()
	defer c.Close()
	const dest = `C:\k\kubelet.exe`

	c.Keep(ctx, store, dest, d1)
	x := c.index(ctx, d1)
	if x == nil {
		t.Fatal("no index of the copy kept")
	}
	var patch bytes.Buffer
	if _, err := x.Diff(ctx, &patch, bytes.NewReader(v2)); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := delta.Apply(&out, bytes.NewReader(v1), int64(len(v1)), &patch); err != nil || !bytes.Equal(out.Bytes(), v2) {
		t.Fatalf("the patch made with the kept index does not rebuild the file (%v)", err)
	}
	if patch.Len() > len(v2)/10 {
		t.Errorf("patch of %d bytes for %d, want the copy matched", patch.Len(), len(v2))
	}

	c.Keep(ctx, store, dest, d2)
	if c.index(ctx, d1) != nil {
		t.Error("the index of what the destination held before was kept")
	}
	if c.index(ctx, d2) == nil {
		t.Error("no index of what the destination holds now")
	}
	c.Keep(ctx, store, `C:\k\other.exe`, hex.EncodeToString(make([]byte, 32)))
	if c.index(ctx, hex.EncodeToString(make([]byte, 32))) != nil {
		t.Error("an index of a copy the store does not hold")
	}
	var nilIndexes *Indexes
	nilIndexes.Keep(ctx, store, dest, d1)
	if nilIndexes.index(ctx, d1) != nil {
		t.Error("a nil Indexes kept something")
	}
}
