package pwsh

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/pwsh/ops"
)

// fakeNode is an Execer that checks the wire protocol the way simnode does
// (pwsh.CommandLine, pwsh.ParseScript) and answers with a canned reply.
type fakeNode struct {
	reply func(ctx context.Context, op string, params json.RawMessage, stdout, stderr io.Writer) (int, error)
	// seen records the op and parameters of the last call.
	op     string
	params json.RawMessage
}

func (f *fakeNode) Exec(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if cmd != CommandLine() {
		return 1, fmt.Errorf("unexpected command line %q", cmd)
	}
	script, err := io.ReadAll(stdin)
	if err != nil {
		return 1, err
	}
	op, params, err := ParseScript(script)
	if err != nil {
		return 1, err
	}
	f.op, f.params = op, params
	return f.reply(ctx, op, params, stdout, stderr)
}

func envelopeReply(env Envelope, status int) func(context.Context, string, json.RawMessage, io.Writer, io.Writer) (int, error) {
	return func(_ context.Context, _ string, _ json.RawMessage, stdout, _ io.Writer) (int, error) {
		line, err := FormatEnvelope(env)
		if err != nil {
			return 1, err
		}
		fmt.Fprint(stdout, "stray output\r\n")
		_, err = stdout.Write(line)
		return status, err
	}
}

// transportError stands for pkg/remote's typed errors.
type transportError struct{ host string }

func (e *transportError) Error() string { return "connection to " + e.host + " lost" }

func TestCallSuccess(t *testing.T) {
	want := ops.NodeFactsResponse{Hostname: "WIN-1", ProductName: "Windows Server 2022 Datacenter", CurrentBuild: "20348", UBR: 2227, Username: `WIN-1\Administrator`, IsAdmin: true, PSVersion: "5.1.20348.2227"}
	data, _ := json.Marshal(want)
	node := &fakeNode{reply: envelopeReply(Envelope{OK: true, Data: data}, 0)}
	got, err := Call(context.Background(), &Runner{Exec: node}, ops.NodeFacts, ops.NodeFactsRequest{})
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	if got != want {
		t.Errorf("Call = %+v, want %+v", got, want)
	}
	if node.op != "node-facts" || string(node.params) != "{}" {
		t.Errorf("node saw op %q params %s", node.op, node.params)
	}
}

func TestCallNullData(t *testing.T) {
	node := &fakeNode{reply: envelopeReply(Envelope{OK: true, Data: json.RawMessage("null")}, 0)}
	got, err := Call(context.Background(), &Runner{Exec: node}, ops.NodeFacts, ops.NodeFactsRequest{})
	if err != nil || got != (ops.NodeFactsResponse{}) {
		t.Errorf("Call = %+v, %v; want the zero response", got, err)
	}
}

func TestCallErrors(t *testing.T) {
	tests := []struct {
		name  string
		reply func(context.Context, string, json.RawMessage, io.Writer, io.Writer) (int, error)
		check func(t *testing.T, err error)
	}{
		{
			name:  "op failure",
			reply: envelopeReply(Envelope{Error: &EnvelopeError{Kind: "access-denied", Message: "not an administrator"}}, 1),
			check: func(t *testing.T, err error) {
				var oe *OpError
				if !errors.As(err, &oe) {
					t.Fatalf("error %v (%T) is not an *OpError", err, err)
				}
				if oe.Op != "node-facts" || oe.Kind != "access-denied" || oe.Message != "not an administrator" {
					t.Errorf("OpError = %+v", oe)
				}
				if !strings.Contains(err.Error(), "op node-facts failed (access-denied): not an administrator") {
					t.Errorf("message = %q", err)
				}
			},
		},
		{
			name: "protocol failure with CLIXML stderr",
			reply: func(_ context.Context, _ string, _ json.RawMessage, stdout, stderr io.Writer) (int, error) {
				fmt.Fprint(stdout, "partial output\r\n")
				fmt.Fprint(stderr, "#< CLIXML\r\n"+objs+progress51+
					`<S S="Error">Exception calling "Create" with "1" argument(s): "Missing closing '}' in statement block."_x000D__x000A_</S>`+
					`<S S="Error">At line:7 char:1_x000D__x000A_</S></Objs>`)
				return 1, nil
			},
			check: func(t *testing.T, err error) {
				var oe *OpError
				if !errors.As(err, &oe) || oe.Kind != "protocol" {
					t.Fatalf("error %v is not a protocol OpError", err)
				}
				want := "Exception calling \"Create\" with \"1\" argument(s): \"Missing closing '}' in statement block.\"\nAt line:7 char:1"
				if oe.Stderr != want {
					t.Errorf("Stderr = %q, want %q", oe.Stderr, want)
				}
				msg := err.Error()
				if !strings.Contains(msg, "exit status 1") || !strings.Contains(msg, "Missing closing '}'") || strings.Contains(msg, "CLIXML") || strings.Contains(msg, "_x000D_") {
					t.Errorf("message = %q", msg)
				}
			},
		},
		{
			name: "protocol failure without stderr shows stdout",
			reply: func(_ context.Context, _ string, _ json.RawMessage, stdout, _ io.Writer) (int, error) {
				fmt.Fprint(stdout, "'powershell.exe' is not recognized as an internal or external command\r\n")
				return 1, nil
			},
			check: func(t *testing.T, err error) {
				var oe *OpError
				if !errors.As(err, &oe) || oe.Kind != "protocol" || !strings.Contains(oe.Stderr, "is not recognized") {
					t.Errorf("error = %v", err)
				}
			},
		},
		{
			name: "transport error",
			reply: func(context.Context, string, json.RawMessage, io.Writer, io.Writer) (int, error) {
				return -1, &transportError{host: "10.0.0.5:22"}
			},
			check: func(t *testing.T, err error) {
				var te *transportError
				if !errors.As(err, &te) || te.host != "10.0.0.5:22" {
					t.Fatalf("errors.As(%v, *transportError) failed", err)
				}
				var oe *OpError
				if errors.As(err, &oe) {
					t.Errorf("a transport error must not look like an op failure: %v", err)
				}
				if !strings.HasPrefix(err.Error(), "op node-facts: ") {
					t.Errorf("message = %q, want the op named", err)
				}
			},
		},
		{
			name:  "undecodable data",
			reply: envelopeReply(Envelope{OK: true, Data: json.RawMessage(`{"ubr":"not a number"}`)}, 0),
			check: func(t *testing.T, err error) {
				var se *json.UnmarshalTypeError
				if !errors.As(err, &se) || !strings.Contains(err.Error(), "decode result") {
					t.Errorf("error = %v", err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Call(context.Background(), &Runner{Exec: &fakeNode{reply: tt.reply}}, ops.NodeFacts, ops.NodeFactsRequest{})
			if err == nil {
				t.Fatal("Call succeeded, want an error")
			}
			tt.check(t, err)
		})
	}
}

func TestCallContext(t *testing.T) {
	t.Run("cancelled while running", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		started := make(chan struct{})
		node := &fakeNode{reply: func(ctx context.Context, _ string, _ json.RawMessage, _, _ io.Writer) (int, error) {
			close(started)
			<-ctx.Done() // an op that would never finish on its own
			return -1, ctx.Err()
		}}
		go func() { <-started; cancel() }()
		done := make(chan error, 1)
		go func() {
			_, err := Call(ctx, &Runner{Exec: node}, ops.NodeFacts, ops.NodeFactsRequest{})
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("error = %v, want context.Canceled", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Call did not return after cancellation")
		}
	})
	t.Run("deadline passed", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		<-ctx.Done()
		called := false
		node := &fakeNode{reply: func(context.Context, string, json.RawMessage, io.Writer, io.Writer) (int, error) {
			called = true
			return 0, nil
		}}
		_, err := Call(ctx, &Runner{Exec: node}, ops.NodeFacts, ops.NodeFactsRequest{})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error = %v, want context.DeadlineExceeded", err)
		}
		if called {
			t.Error("the op ran although the context was already done")
		}
	})
}

func TestRunnerSendsEmbeddedScript(t *testing.T) {
	var script []byte
	exec := execFunc(func(_ context.Context, _ string, stdin io.Reader, stdout, _ io.Writer) (int, error) {
		script, _ = io.ReadAll(stdin)
		line, _ := FormatEnvelope(Envelope{OK: true, Data: json.RawMessage(`{}`)})
		_, err := stdout.Write(line)
		return 0, err
	})
	if _, err := Call(context.Background(), &Runner{Exec: exec}, ops.NodeFacts, ops.NodeFactsRequest{}); err != nil {
		t.Fatal(err)
	}
	body, err := ops.Script("node-facts")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(script, []byte("# op: node-facts\n")) || !bytes.Contains(script, []byte(body)) {
		t.Errorf("stdin is not the assembled node-facts script:\n%s", script)
	}
}

type execFunc func(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error)

func (f execFunc) Exec(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	return f(ctx, cmd, stdin, stdout, stderr)
}
