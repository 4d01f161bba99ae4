package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/internal/syncbuf"
	"sigs.k8s.io/swdt/pkg/daytwo"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ui"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

func newExecCommand(e *env) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "exec [NODE] [--] PROGRAM [ARG...]",
		Short: "Run a program on a node and show its output",
		Long: `Run one program on a node of the -c file, with its arguments passed as
data: never through a shell, so nothing in them is expanded or quoted
away. PROGRAM is a full path, or a name found in the PATH of the node's
sshd (C:\Windows\System32, C:\Windows, ...). Its stdout and stderr arrive
as it writes them, byte for byte, and swdt exits with its exit status.

Everything after NODE belongs to the program, flags included; put swdt's
own flags before NODE. NODE may be left out when --node names one or the
-c file has only one: then put -- before PROGRAM. Shell built-ins (dir, type, Get-Service) are not
programs: run them through cmd.exe /c or powershell.exe -Command.

--cluster-node NAME takes the Node NAME of the cluster a rollout file
names instead of NODE, reached through the Kubernetes API with no SSH
(swdt's HostProcess pod on it, as swdt rollout makes it).

With -o json the output is collected, not passed through, into one
document: the one swdt ssh -o json -- COMMAND prints, of kind ExecReport.

Exit codes: the program's exit status; 1 when it could not be started, ran
longer than --timeout, exited with a status above 255 (0xC0000005...) or
the node could not be reached; 2 usage or config error.`,
		Example: `  swdt exec node1 -- crictl ps -a
  swdt exec node1 -- sc.exe queryex kubelet
  swdt exec node1 -- powershell.exe -NoProfile -Command "Get-Service kube*"
  swdt exec -c rollout.yaml --cluster-node win-01 -- hostname`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return exitcode.WithCode(exitcode.Usage, fmt.Errorf("swdt exec needs a program: %s", cmd.Use))
			}
			return nil
		},
		ValidArgsFunction: e.completeNode,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExec(cmd.Context(), e, args, timeout)
		},
	}
	// Everything after NODE is the program's.
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "stop the program after this long")
	e.addClusterNodeFlag(cmd)
	return cmd
}

func runExec(ctx context.Context, e *env, args []string, timeout time.Duration) error {
	if timeout <= 0 {
		return exitcode.WithCode(exitcode.Usage, fmt.Errorf("--timeout must be positive, not %s", timeout))
	}
	// "NODE -- PROGRAM": what comes before -- can only be a node.
	spec, command, err := e.pickNode("exec", args, len(args) > 1 && args[1] == "--")
	if err != nil {
		return err
	}
	switch {
	case len(command) > 0 && command[0] == "--" && len(command) == 1:
		return exitcode.WithCode(exitcode.Usage, errors.New("swdt exec: no program after --"))
	case len(command) > 0 && command[0] == "--":
		command = command[1:]
	case len(command) == 0:
		return exitcode.WithCode(exitcode.Usage, fmt.Errorf("swdt exec needs a program to run on node %s: swdt exec [NODE] [--] PROGRAM [ARG...]", spec.Name))
	}
	stdout, stderr := e.ui.Passthrough()
	// With -o json the output goes into the document, as swdt ssh's.
	var captured syncbuf.Buffer
	jsonOut := e.ui.Format() == ui.FormatJSON
	if jsonOut {
		stdout, stderr = &captured, &captured
	}
	code, err := daytwo.Exec(ctx, spec, e.connectQuiet, command, daytwo.ExecOptions{
		Timeout: timeout, Stdout: stdout, Stderr: stderr, Warn: func(msg string) { e.ui.Warn("%s", msg) }})
	if jsonOut {
		err = firstErr(err, report.PrintCommand(e.ui, report.KindExec, spec.Name, strings.Join(command, " "), code, captured.String(), err))
	}
	if err != nil {
		return err
	}
	return exitcode.Quiet(code)
}
