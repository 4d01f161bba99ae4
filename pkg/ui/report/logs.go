package report

import (
	"time"

	"sigs.k8s.io/swdt/pkg/daytwo"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/ui"
)

// Logs is one -o json document of swdt logs: one per read, so that
// --follow prints a stream of them, one per line.
type Logs struct {
	Meta
	Node string `json:"node"`
	// Result is ok: the logs were read.
	Result   string              `json:"result"`
	Services []daytwo.ServiceLog `json:"services"`
	// Absent are the services asked for that the node does not have.
	Absent []string `json:"absent,omitempty"`
}

// PrintLogs prints one read: with headers the first time, prefixed by the
// service's name when there are several.
func PrintLogs(u *ui.UI, r daytwo.Read) error {
	doc := Logs{Meta: meta(KindLogs), Node: r.Node, Result: OK, Services: make([]daytwo.ServiceLog, len(r.Services)), Absent: r.Absent}
	for i, s := range r.Services {
		// Nothing new is an empty list, in a single read as under
		// --follow.
		if s.Lines == nil {
			s.Lines = []string{}
		}
		if s.Events == nil {
			s.Events = []ops.ServiceEvent{}
		}
		doc.Services[i] = s
	}
	if u.Format() == ui.FormatJSON {
		return printJSON(u, doc)
	}
	for _, name := range doc.Absent {
		u.Step(doc.Node, "%s: no such service on this node; skipped", name)
	}
	for _, s := range doc.Services {
		if r.First {
			switch {
			case s.LogFile == "":
				u.Step(doc.Node, "%s (%s): no log file (no --log-file in its command line, no nssm redirection); events only", s.Service, s.Status)
			case s.LogError != "":
				u.Warn("node %s: %s (%s): %s: %s", doc.Node, s.Service, s.Status, s.LogFile, s.LogError)
			default:
				u.Step(doc.Node, "%s (%s): %s", s.Service, s.Status, s.LogFile)
			}
		}
		if s.EventsError != "" {
			u.Warn("node %s: %s: cannot read the event log: %s", doc.Node, s.Service, s.EventsError)
		}
		lead := ""
		if len(doc.Services) > 1 {
			lead = s.Service + " | "
		}
		for _, ev := range s.Events {
			stamp := "-"
			if !ev.Time.IsZero() {
				stamp = ev.Time.UTC().Format(time.RFC3339)
			}
			u.Printf("%sevent %s: %s\n", lead, stamp, ev.Message)
		}
		for _, l := range s.Lines {
			u.Printf("%s%s\n", lead, l)
		}
	}
	return nil
}
