package app

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/pkg/daytwo"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ui"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

func newSSHCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ssh [NODE] [-- COMMAND...]",
		Short: "Open a shell on a node, or run one command with a terminal",
		Long: `Open an interactive shell on a node (cmd.exe, or the DefaultShell set for
Windows OpenSSH) with a terminal, as minikube ssh does, over the node's
connection as every swdt command makes it: the node file's key,
ssh-agent, known_hosts and host key policy, and ProxyJump from the ssh
config swdt reads. Keys go to the node as
typed: Ctrl-C interrupts the program running there, not swdt; the
window's size follows yours. Leave the shell with exit.

With -- COMMAND, run that one command with a terminal (as ssh -t does)
and exit with its status. COMMAND is a command line for the node's
shell: its words are joined with spaces and not quoted, as ssh does. For
a program with arguments passed as data, use swdt exec.

swdt always asks for a terminal, also when its input is not one (as
ssh -tt): then the node's shell echoes what it reads.

NODE may be left out when --node names one or the file has one node.

--cluster-node NAME takes the Node NAME of the cluster a rollout file
names instead of NODE, reached through the Kubernetes API with no SSH, as
kubectl exec -it does: cmd.exe in swdt's HostProcess pod on it (as swdt
rollout makes it), as SYSTEM, with a terminal. It needs create on
pods/exec.

Exit codes: the remote shell's or command's exit status; 1 when the node
could not be reached, the connection was lost, or the status does not fit
in 0-255 (0xC000013A after Ctrl-C...); 2 usage or config error.`,
		Example: `  swdt ssh node1
  swdt ssh node1 -- ipconfig /all
  swdt ssh -- type C:\k\kubelet.log
  swdt ssh -o json node1 -- hostname
  swdt ssh -c rollout.yaml --cluster-node win-01`,
		ValidArgsFunction: e.completeNode,
		RunE: func(cmd *cobra.Command, args []string) error {
			before, after := args, []string(nil)
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				before, after = args[:dash], args[dash:]
			}
			return runSSH(cmd.Context(), e, before, after)
		},
	}
	e.addClusterNodeFlag(cmd)
	return cmd
}

func runSSH(ctx context.Context, e *env, before, after []string) error {
	spec, rest, err := e.pickNode("ssh", before, false)
	if err != nil {
		return err
	}
	command := strings.Join(append(rest, after...), " ")
	jsonOut := e.ui.Format() == ui.FormatJSON
	if jsonOut && command == "" {
		return exitcode.WithCode(exitcode.Usage, errors.New("an interactive shell has no JSON output: give a command after --, or leave out -o json"))
	}
	stdout, _ := e.ui.Passthrough()
	var captured bytes.Buffer
	if jsonOut {
		stdout = &captured
	}
	opts := node.ShellOptions{Command: command, Term: os.Getenv("TERM"), Stdin: e.streams.In, Stdout: stdout}
	if t := e.ui.Terminal(e.streams.In); t != nil && !jsonOut {
		if size, err := t.Size(); err == nil {
			opts.Size = node.WindowSize(size)
		}
		restore, err := t.Raw()
		if err != nil {
			return err
		}
		defer restore()
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		resize := make(chan node.WindowSize)
		go func() {
			for sz := range t.Resizes(rctx) {
				select {
				case resize <- node.WindowSize(sz):
				case <-rctx.Done():
					return
				}
			}
		}()
		opts.Resize = resize
	}
	status, err := daytwo.Shell(ctx, spec, e.connectQuiet, opts, func(msg string) { e.ui.Warn("%s", msg) })
	if jsonOut {
		err = firstErr(err, report.PrintCommand(e.ui, report.KindSSH, spec.Name, command, status, captured.String(), err))
	}
	if err != nil {
		return err
	}
	return exitcode.Quiet(status)
}
