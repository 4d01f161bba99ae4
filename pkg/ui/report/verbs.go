package report

import (
	"strconv"
	"time"

	"sigs.k8s.io/swdt/internal/words"
	"sigs.k8s.io/swdt/pkg/daytwo"
	"sigs.k8s.io/swdt/pkg/ui"
)

// The documents of the verbs of a day on one node: each names its node
// and has the node's result at the top.

// Command is the -o json document of swdt exec and of swdt ssh with a
// command: the same fields, kinds ExecReport and SSHReport.
type Command struct {
	Meta
	// Result is ok when the command exited 0, else failed.
	Result   string `json:"result"`
	Node     string `json:"node"`
	Command  string `json:"command"`
	ExitCode int    `json:"exitCode"`
	// Output is what the command wrote: stdout and stderr together, as a
	// terminal shows them, cleaned as every JSON document is (no escape
	// sequences or carriage returns).
	Output string `json:"output"`
	Error  string `json:"error,omitempty"`
}

// PrintCommand prints the document of a command of kind run on node.
func PrintCommand(u *ui.UI, kind, node, command string, exitCode int, output string, err error) error {
	doc := Command{Meta: meta(kind), Result: OK, Node: node, Command: command, ExitCode: exitCode, Output: output, Error: errText(err)}
	if err != nil || exitCode != 0 {
		doc.Result = Failed
	}
	return printJSON(u, doc)
}

// Copy is the -o json document of swdt cp.
type Copy struct {
	Meta
	Result string `json:"result"`
	Node   string `json:"node"`
	*daytwo.CopyReport
	Error string `json:"error,omitempty"`
}

// PrintCopy shows a copy to or from node: the document, or a success line.
func PrintCopy(u *ui.UI, node string, rep *daytwo.CopyReport, err error) error {
	if u.Format() == ui.FormatJSON {
		doc := Copy{Meta: meta(KindCopy), Result: Changed, Node: node, CopyReport: rep, Error: errText(err)}
		if err != nil {
			doc.Result = Failed
		}
		return printJSON(u, doc)
	}
	if err == nil {
		u.Success("node %s: copied %s (%s) in %s", node, words.Count(len(rep.Files), "file"), ui.Bytes(rep.Bytes), (time.Duration(rep.DurationMs) * time.Millisecond).String())
	}
	return nil
}

// PortForward is the one document swdt port-forward prints, once every
// port listens.
type PortForward struct {
	Meta
	Result   string           `json:"result"`
	Node     string           `json:"node"`
	Forwards []daytwo.Forward `json:"forwards"`
}

// PrintForwarding says that forwards listen on node's behalf.
func PrintForwarding(u *ui.UI, node string, forwards []daytwo.Forward) error {
	if u.Format() == ui.FormatJSON {
		return u.JSONLine(PortForward{Meta: meta(KindPortForward), Result: Listening, Node: node, Forwards: forwards})
	}
	for _, f := range forwards {
		u.Printf("Forwarding from %s -> %s on node %s\n", f.Local, f.Remote, node)
	}
	u.Step(node, "forwarding until Ctrl-C")
	return nil
}

// Failure is the -o json document of a one-node verb that failed before
// its report, for the verbs whose report has no room for an error (logs,
// port-forward).
type Failure struct {
	Meta
	// Result is failed.
	Result string `json:"result"`
	Node   string `json:"node"`
	Error  string `json:"error"`
}

// PrintFailure prints, with -o json, the Failure document of kind for
// node (after a --follow's documents, it ends their stream); the text
// form prints nothing: Run reports err.
func PrintFailure(u *ui.UI, kind, node string, err error) error {
	if u.Format() != ui.FormatJSON {
		return nil
	}
	return printJSON(u, Failure{Meta: meta(kind), Result: Failed, Node: node, Error: err.Error()})
}

// Restart is the -o json document of swdt restart.
type Restart struct {
	Meta
	Result string `json:"result"`
	Node   string `json:"node"`
	*daytwo.RestartReport
	Error string `json:"error,omitempty"`
}

// PrintRestart shows a restart on node: the document, or a table of its
// services and a success line. It returns err, or the error of printing.
func PrintRestart(u *ui.UI, node string, rep *daytwo.RestartReport, err error) error {
	if u.Format() == ui.FormatJSON {
		doc := Restart{Meta: meta(KindRestart), Result: Changed, Node: node, RestartReport: rep, Error: errText(err)}
		if err != nil {
			doc.Result = Failed
			if rep != nil && rep.Services == nil {
				// It failed before the node restarted anything (it could
				// not be reached, or refused the request).
				doc.RestartReport = nil
			}
		}
		return firstErr(err, printJSON(u, doc))
	}
	if rep != nil && len(rep.Services) > 0 {
		downtime := map[string]string{}
		for _, d := range rep.Downtime {
			downtime[d.Service] = (time.Duration(d.DowntimeMs) * time.Millisecond).String()
		}
		var rows [][]string
		for _, s := range rep.Services {
			rows = append(rows, []string{s.Service, pidText(s.PIDBefore), pidText(s.PIDAfter), orDash(downtime[s.Service]), s.Status})
		}
		for _, s := range rep.AlsoStopped {
			rows = append(rows, []string{s + " (dependent)", "-", "-", orDash(downtime[s]), "restarted with it"})
		}
		err = firstErr(err, u.Table([]string{"SERVICE", "PID BEFORE", "PID AFTER", "DOWNTIME", "STATUS"}, rows))
	}
	if err == nil {
		u.Success("node %s: restarted in %s", node, (time.Duration(rep.DurationMs) * time.Millisecond).String())
	}
	return err
}

// Reboot is the -o json document of swdt reboot.
type Reboot struct {
	Meta
	Result string `json:"result"`
	Node   string `json:"node"`
	*daytwo.RebootReport
	Error string `json:"error,omitempty"`
}

// PrintReboot shows a reboot of node: the document, or a table of its
// services and a success line. It returns err, or the error of printing.
func PrintReboot(u *ui.UI, node string, rep *daytwo.RebootReport, err error) error {
	if u.Format() == ui.FormatJSON {
		doc := Reboot{Meta: meta(KindReboot), Result: Changed, Node: node, RebootReport: rep, Error: errText(err)}
		if err != nil {
			doc.Result = Failed
		}
		return firstErr(err, printJSON(u, doc))
	}
	if rep != nil && len(rep.Services) > 0 {
		var rows [][]string
		for _, s := range rep.Services {
			after := "-"
			if s.RunningAfterMs > 0 {
				after = ms(s.RunningAfterMs)
			}
			rows = append(rows, []string{s.Service, orDash(s.Status), orDash(s.StartType), pidText(s.PID), after})
		}
		err = firstErr(err, u.Table([]string{"SERVICE", "STATUS", "START TYPE", "PID", "RUNNING AFTER"}, rows))
	}
	switch {
	case err != nil:
	case !rep.Waited:
		u.Success("node %s: reboot asked for (swdt reboot --wait waits for it)", node)
	case rep.ServicesRunningAfterMs > 0:
		u.Success("node %s: down after %s, SSH back after %s, services Running after %s", node, ms(rep.DownAfterMs), ms(rep.SSHBackAfterMs), ms(rep.ServicesRunningAfterMs))
	default:
		u.Success("node %s: down after %s, SSH back after %s", node, ms(rep.DownAfterMs), ms(rep.SSHBackAfterMs))
	}
	return err
}

// firstErr is err, else perr (an error of printing).
func firstErr(err, perr error) error {
	if err != nil {
		return err
	}
	return perr
}

func pidText(pid int) string {
	if pid == 0 {
		return "-"
	}
	return strconv.Itoa(pid)
}

func ms(n int64) string {
	return (time.Duration(n) * time.Millisecond).Round(10 * time.Millisecond).String()
}
