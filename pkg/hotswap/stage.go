package hotswap

import (
	"context"
	"fmt"
	"io"
	"slices"

	"golang.org/x/sync/errgroup"

	"sigs.k8s.io/swdt/internal/winpath"
	"sigs.k8s.io/swdt/internal/words"
	"sigs.k8s.io/swdt/pkg/ops"
)

// upload is how an item's file went to the node: as it is (encoding
// empty), or as an encoded upload the swap op decodes into the staged
// file; data, when set, is that upload, not sent yet: it travels in the
// swap op's request; attached, when set, is that upload still being made:
// it follows the swap op's request on its input (an attachment).
type upload struct {
	encoding string
	data     []byte
	attached io.ReadCloser
	// tooLarge is an attachment ended past StreamLimit.
	tooLarge bool
}

// stage uploads every update to its staged name in parallel, records how
// each was sent, and returns the items ready to swap. The node verifies
// them in the swap op, before it stops anything.
func (r *swapRun) stage(ctx context.Context, updates []Step, missingDirs []string) []Item {
	r.opts.Observer.Step("staging " + words.Count(len(updates), "binary") + " while services keep running")
	var (
		ready []Item
		g     errgroup.Group
	)
	g.SetLimit(r.opts.Parallel)
	for _, step := range updates {
		it := step.Item
		needDir := slices.ContainsFunc(missingDirs, func(d string) bool { return winpath.Equal(d, winpath.Dir(it.Destination)) })
		g.Go(func() error {
			how, wire, transfer, err := r.stageOne(ctx, it, step.Current, needDir)
			r.mu.Lock()
			defer r.mu.Unlock()
			res := r.result(it)
			res.BytesSent, res.FileSize, res.Transfer = wire, it.Source.Size, transfer
			if err != nil {
				res.Action = ActionFailed
				res.setErr(err)
				return nil
			}
			ready = append(ready, it)
			r.sent[it.key()] = how
			return nil
		})
	}
	_ = g.Wait() // per-item errors are in the results
	// Keep the plan's order so that output is stable.
	var ordered []Item
	for _, step := range updates {
		for _, it := range ready {
			if it.key() == step.Item.key() {
				ordered = append(ordered, it)
			}
		}
	}
	return ordered
}

// stageOne puts it on the node, as its staged file or as an encoded
// upload, and returns how, the bytes sent and the Transfer* name.
func (r *swapRun) stageOne(ctx context.Context, it Item, current ops.FileInfo, needDir bool) (upload, int64, string, error) {
	// The inspect said which directories are missing: no round trip for
	// the others.
	if needDir {
		dir := winpath.Dir(winpath.Clean(it.Destination))
		if err := r.n.MkdirAll(ctx, dir); err != nil {
			return upload{}, 0, "", fmt.Errorf("create %s: %w", dir, err)
		}
	}
	encodes := r.caps.Encoding && r.opts.Transfer.compresses()
	if r.attach && encodes && current.Exists {
		// A run in one op: the patch being made follows the swap op's
		// request as it is made.
		if stream, ok := r.opts.Ahead.stream(it, current.SHA256); ok {
			r.opts.Observer.Step(it.Name + ": its patch follows the swap request as it is made")
			return upload{encoding: ops.EncodingPatch, attached: stream}, 0, TransferPatch, nil
		}
	}
	if encodes && current.Exists && r.opts.Ahead.inline(it, current.SHA256) {
		// Nothing to upload: the patch made ahead travels in the swap
		// op's request (no transfer to show the progress of).
		u, sent, how, err := stageEncoded(ctx, r.n, it, current, r.opts, func(int64) {})
		if err == nil && u.data != nil {
			r.opts.Observer.Step(fmt.Sprintf("%s: its patch, %.1f KiB, goes in the swap request", it.Name, float64(sent)/1024))
		}
		return u, sent, how, err
	}
	var read int64
	update := r.opts.Observer.Upload(it)
	defer func() { update(read) }()
	progress := func(s int64) { read = s; update(s) }
	if encodes {
		return stageEncoded(ctx, r.n, it, current, r.opts, progress)
	}
	r.opts.Ahead.stop() // files go as they are
	sent, err := stagePlain(ctx, r.n, it, progress)
	return upload{}, sent, TransferPlain, err
}

// stagePlain uploads it as it is to its staged name.
func stagePlain(ctx context.Context, n Node, it Item, progress func(int64)) (int64, error) {
	var sent int64
	f, err := it.Source.Open()
	if err != nil {
		return 0, err
	}
	defer f.Close()
	err = n.Upload(ctx, f, it.Source.Size, it.Staged(), func(s int64) {
		sent = s
		progress(s)
	})
	if err != nil {
		return sent, fmt.Errorf("stage %s: %w", it.Staged(), err)
	}
	return sent, nil
}
