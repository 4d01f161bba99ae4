package node_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/agentbin"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
)

// floodConn is a node that prints: each op writes flood bytes of filler
// (lead first) on one stream, as long as the session lasts, then its
// result line.
type floodConn struct {
	node.Conn
	stream string // "stdout" or "stderr"
	lead   string
	flood  int64
	result string
	sent   int64 // by the last Exec
}

const floodChunk = 64 << 10

func (c *floodConn) Exec(ctx context.Context, _ string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	_, _ = io.Copy(io.Discard, stdin)
	c.sent = 0
	w := stdout
	if c.stream == "stderr" {
		w = stderr
	}
	_, _ = io.WriteString(w, c.lead)
	chunk := bytes.Repeat([]byte("A"), floodChunk)
	for c.sent < c.flood {
		if err := ctx.Err(); err != nil {
			return -1, fmt.Errorf("run on the node: %w", err)
		}
		n := min(int64(len(chunk)), c.flood-c.sent)
		_, _ = w.Write(chunk[:n])
		c.sent += n
	}
	_, _ = io.WriteString(stdout, c.result)
	return 0, nil
}

func (c *floodConn) Addr() string { return "flood:22" }

// Stat and Download show a node that has this swdt's agent in place, as
// delivery reads it back before anything runs it.
func (c *floodConn) Stat(_ context.Context, p string) (fs.FileInfo, error) {
	a, err := agentbin.For("amd64")
	if err != nil || !strings.EqualFold(p, ops.AgentPath(a.SHA256)) {
		return nil, fs.ErrNotExist
	}
	return agentFile{size: int64(len(a.Binary))}, nil
}

func (c *floodConn) Download(_ context.Context, _ string, w io.Writer) error {
	a, err := agentbin.For("amd64")
	if err != nil {
		return err
	}
	_, err = w.Write(a.Binary)
	return err
}

// agentFile is the agent's file as Stat describes it.
type agentFile struct{ size int64 }

func (f agentFile) Name() string       { return "swdt-agent.exe" }
func (f agentFile) Size() int64        { return f.size }
func (f agentFile) Mode() fs.FileMode  { return 0o644 }
func (f agentFile) ModTime() time.Time { return time.Time{} }
func (f agentFile) IsDir() bool        { return false }
func (f agentFile) Sys() any           { return nil }

const okResult = ops.ResultMarker + `{"ok":true,"data":{}}` + "\r\n"

// What a node sends for one op is bounded: a reply or a stderr past its cap
// ends the op with an error naming the cap, and swdt reads, and keeps, no
// more than the cap whatever the node goes on printing.
func TestOpOutputIsBounded(t *testing.T) {
	tests := []struct {
		name   string
		conn   floodConn
		stream string // the stream whose cap ends the op; "" for none
		limit  int
		check  func(t *testing.T, err error)
	}{
		{name: "512 MiB on stdout", conn: floodConn{stream: "stdout", flood: 512 << 20, result: okResult},
			stream: "stdout", limit: node.MaxReply},
		{name: "40 MB on stderr", conn: floodConn{stream: "stderr", flood: 40e6, result: okResult},
			stream: "stderr", limit: node.MaxStderr},
		{name: "noise under the caps is ignored", conn: floodConn{stream: "stdout", lead: "banner\n", flood: 1 << 20, result: "\n" + okResult}},
		{name: "an op's failure shows the end of its stderr only",
			conn: floodConn{stream: "stderr", lead: "start\n", flood: 512 << 10, result: ops.ResultMarker + `{"ok":false,"error":{"kind":"io","message":"broken"}}` + "\r\n"},
			check: func(t *testing.T, err error) {
				var oe *ops.Error
				if !errors.As(err, &oe) || oe.Kind != "io" || len(oe.Stderr) > 8<<10+3 || strings.Contains(oe.Stderr, "start") {
					t.Errorf("err = %.200v, want the op's io error with the last 8 KiB of its stderr", err)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &tt.conn
			n := node.New("winworker", c, nil)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := n.Facts(ctx)
			switch {
			case tt.check != nil:
				tt.check(t, err)
			case tt.stream == "":
				if err != nil {
					t.Fatalf("Facts: %v", err)
				}
			default:
				var le *node.OutputLimitError
				if !errors.As(err, &le) || le.Stream != tt.stream || le.Limit != tt.limit || le.Op != ops.NodeFacts.Name {
					t.Fatalf("err = %v, want the %s cap of node-facts", err, tt.stream)
				}
				if want := fmt.Sprintf("more than %d MiB on %s, swdt's cap for one op", tt.limit>>20, tt.stream); !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
				if sent := c.sent; sent > int64(tt.limit)+floodChunk {
					t.Errorf("swdt read %d bytes, want no more than the %d-byte cap and one write", sent, tt.limit)
				}
			}
		})
	}
}

// swdt exec passes its program's output on, however much: only a result
// line that never ends is cut.
func TestExecOutputBounds(t *testing.T) {
	execResult := ops.ResultMarker + `{"ok":true,"data":{"exitCode":0}}` + "\r\n"
	c := &floodConn{stream: "stdout", result: okResult}
	n := node.New("winworker", c, nil)
	if _, err := n.Facts(context.Background()); err != nil { // the agent's path is known
		t.Fatal(err)
	}

	// 40 MB on the program's stderr reach the user's stderr, whole.
	*c = floodConn{stream: "stderr", flood: 40e6}
	var out, errOut countWriter
	if _, err := n.Exec(context.Background(), []string{"noisy.exe"}, time.Minute, &out, &errOut); err == nil ||
		!strings.Contains(err.Error(), "no result line") {
		t.Fatalf("err = %v, want the missing result line reported", err)
	}
	if errOut.n != 40e6 {
		t.Errorf("the user's stderr got %d bytes, want all 40000000", errOut.n)
	}

	// A result line that never ends is not kept past the cap.
	*c = floodConn{stream: "stderr", lead: ops.ResultMarker, flood: 40e6, result: execResult}
	_, err := n.Exec(context.Background(), []string{"hostile.exe"}, time.Minute, &out, &errOut)
	var le *node.OutputLimitError
	if !errors.As(err, &le) || le.Stream != "stderr" || le.Limit != node.MaxStderr {
		t.Fatalf("err = %v, want the stderr cap", err)
	}
	if sent := c.sent; sent > node.MaxStderr+2*floodChunk {
		t.Errorf("swdt read %d bytes of one line, want no more than the cap", sent)
	}
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }
