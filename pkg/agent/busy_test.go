package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// A file a scanner keeps open past the retries fails the op with an
// error that names the file and its likely holder.
func TestBusyFileNamesItsHolder(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t, simnode.WithScannerHold(time.Hour))
	n := ts.Node()
	const tool = `C:\k\tool.exe`
	if err := n.WriteFile(tool, []byte("MZ tool")); err != nil {
		t.Fatal(err)
	}
	_, err := agent.Call(context.Background(), n.OS(), ops.FilesRemove, ops.FilesRemoveRequest{Paths: []string{tool}})
	if kind, msg := provFailure(t, err); kind != ops.KindLocked || !strings.Contains(msg, tool) || !strings.Contains(msg, "scanner") {
		t.Fatalf("failure %s %q; want a locked failure naming %s and a scanner", kind, msg, tool)
	}
	if !n.Exists(tool) {
		t.Error("the file was removed")
	}
}
