package simnode_test

import (
	"bytes"
	"errors"
	"testing"

	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/winos"
)

// TestCloneAppend: a file created on a ReFS C: takes whole clusters of
// another file without copying them, after what was written before, and
// its markers are known without reading it again; a misaligned offset,
// length or position is error 87 and leaves the file as it was; NTFS
// cannot clone at all (Create returns no winos.Cloner).
func TestCloneAppend(t *testing.T) {
	t.Parallel()
	const c = simnode.ReFSCluster
	marker := simnode.MarkerCrashOnStart
	tests := []struct {
		name string
		fs   string
		head int // bytes written before the clone
		// split makes the source hold no marker, and the written bytes
		// end with a marker's start that its cluster 2 ends.
		split    bool
		off, n   int64
		wantErr  winos.Errno // 0: cloned
		noCloner bool
	}{
		{name: "whole clusters", fs: simnode.ReFS, off: 2 * c, n: 3 * c},
		{name: "after a cluster written", fs: simnode.ReFS, head: c, off: c, n: 7 * c},
		{name: "a marker across the written bytes and a clone of a source without markers", fs: simnode.ReFS, head: c, split: true, off: 2 * c, n: 3 * c},
		{name: "the source's offset is misaligned", fs: simnode.ReFS, off: c + 1, n: c, wantErr: winos.ErrInvalidParameter},
		{name: "the length is not whole clusters", fs: simnode.ReFS, off: 0, n: c + 512, wantErr: winos.ErrInvalidParameter},
		{name: "the file's end is misaligned", fs: simnode.ReFS, head: 100, off: 0, n: c, wantErr: winos.ErrInvalidParameter},
		{name: "past the source's end", fs: simnode.ReFS, off: 4 * c, n: 5 * c, wantErr: winos.ErrInvalidParameter},
		{name: "NTFS", fs: simnode.NTFS, noCloner: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := make([]byte, 8*c)
			for i := range src {
				src[i] = byte(i * 7 / c)
			}
			head := bytes.Repeat([]byte("h"), tt.head)
			if tt.split {
				copy(head[len(head)-13:], marker[:13])
				copy(src[2*c:], marker[13:])
			} else {
				copy(src[c+100:], marker)
			}
			ts := simnode.StartTest(t, simnode.WithOptions(func(o *simnode.Options) { o.FileSystem = tt.fs }))
			w := ts.Node().OS()
			if err := w.WriteFile(`C:\k\old.exe`, src); err != nil {
				t.Fatal(err)
			}
			out, err := w.Create(`C:\k\new.exe`)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			cl, ok := out.(winos.Cloner)
			if ok == tt.noCloner {
				t.Fatalf("Create returned a winos.Cloner: %v, want %v", ok, !tt.noCloner)
			}
			if !ok {
				return
			}
			if cl.ClusterSize() != c {
				t.Errorf("cluster size %d, want %d", cl.ClusterSize(), c)
			}
			if _, err := cl.Write(head); err != nil {
				t.Fatal(err)
			}
			ref, err := w.Open(`C:\k\old.exe`)
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			err = cl.CloneAppend(ref, tt.off, tt.n)
			want := head
			if tt.wantErr == 0 {
				if err != nil {
					t.Fatalf("clone: %v", err)
				}
				want = append(bytes.Clone(head), src[tt.off:tt.off+tt.n]...)
			} else if !errors.Is(err, tt.wantErr) {
				t.Fatalf("clone: %v, want %v", err, tt.wantErr)
			}
			// The file's offset is past the clone: a write follows it.
			if _, err := cl.Write([]byte("tail")); err != nil {
				t.Fatal(err)
			}
			if err := cl.Close(); err != nil {
				t.Fatal(err)
			}
			got, err := ts.Node().ReadFile(`C:\k\new.exe`)
			if err != nil {
				t.Fatal(err)
			}
			if want = append(want, "tail"...); !bytes.Equal(got, want) {
				t.Errorf("the file has %d bytes, want %d (equal: false)", len(got), len(want))
			}
			cache := ts.Node().CachedMarkers(`C:\k\new.exe`)
			if has := bytes.Contains(want, []byte(marker)); cache == nil || cache[marker] != has {
				t.Errorf("markers known %v, want the crash marker: %v", cache, has)
			}
		})
	}
}
