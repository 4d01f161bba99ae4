package simnode_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/remote"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// The node API, the agent's delivery and the SSH client of swdt itself,
// end to end against simnode, from a node.yaml's credentials.
func TestRemoteClientAgainstSimnode(t *testing.T) {
	ts := simnode.StartTest(t, simnode.WithAccount(simnode.Account{Name: "developer"}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg, err := node.RemoteConfig(ts.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	cfg.SSHConfigFile = "none"
	c, err := remote.Dial(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	n := node.New("winworker", c, nil)
	facts, err := n.Facts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !facts.IsAdmin || facts.CurrentBuild != "20348" {
		t.Errorf("facts %+v", facts)
	}

	// Upload next to a running binary, then try to overwrite it.
	data := bytes.Repeat([]byte("k"), 3<<20)
	if err := c.Upload(ctx, bytes.NewReader(data), int64(len(data)), `C:\k\kubelet.exe.swdt-new`, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := ts.Node().ReadFile(`C:\k\kubelet.exe.swdt-new`); !bytes.Equal(got, data) {
		t.Errorf("uploaded %d bytes, node has %d", len(data), len(got))
	}
	if err := c.Upload(ctx, bytes.NewReader(data), int64(len(data)), `C:\k\kubelet.exe`, nil); err == nil {
		t.Error("overwriting a running service's binary succeeded")
	}

	// A failing op reaches the caller as a typed error.
	_ = ts.UpdateFaults(func(f *simnode.Faults) { f.FailOps = []string{"node-facts"} })
	_, err = n.Facts(ctx)
	var oe *ops.Error
	if !errors.As(err, &oe) || oe.Kind != "injected" || oe.Op != "node-facts" {
		t.Fatalf("err = %v", err)
	}
}
