package app

import (
	"bufio"
	"context"
	"encoding/json"
	"maps"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/internal/clustertest"
	"sigs.k8s.io/swdt/pkg/exitcode"
)

// The JSON contract of every verb is the table in docs/reference.md
// ("JSON documents and exit codes"); the tests below run each verb
// against simnodes and check what it prints against the table, so the
// two cannot drift apart.

const referenceDoc = "../../../docs/reference.md"

// contractRow is one row of the table.
type contractRow struct {
	command string // without "swdt ": "vm status"
	kind    string
	// fields and nodeFields map each field (of the document, of each
	// element of nodes) to whether it is always there.
	fields, nodeFields map[string]bool
	results            []string
	// streams is set when the verb prints a document per line.
	streams bool
	codes   []int
}

// readContract parses the table.
func readContract(t *testing.T) []contractRow {
	t.Helper()
	f, err := os.Open(referenceDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const header = "| Command | `kind` | Fields | Fields of each node | `result` | Streams | Exit codes |"
	var rows []contractRow
	in := false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		switch {
		case line == header:
			in = true
			continue
		case !in:
			continue
		case !strings.HasPrefix(line, "|"):
			in = false
			continue
		case strings.HasPrefix(line, "|---"):
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 7 {
			t.Fatalf("%s: a row of %d cells: %s", referenceDoc, len(cells), line)
		}
		row := contractRow{
			command:    strings.TrimPrefix(unquote(cells[0]), "swdt "),
			kind:       unquote(cells[1]),
			fields:     fieldSet(cells[2]),
			nodeFields: fieldSet(cells[3]),
			results:    words(cells[4]),
			streams:    strings.TrimSpace(cells[5]) != "-",
		}
		// Numbers, and words such as "the program's exit status".
		for _, c := range strings.Split(cells[6], ",") {
			if n, err := strconv.Atoi(strings.TrimSpace(c)); err == nil {
				row.codes = append(row.codes, n)
			}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		t.Fatalf("%s has no table headed %s", referenceDoc, header)
	}
	return rows
}

func unquote(cell string) string { return strings.Trim(strings.TrimSpace(cell), "`") }

var codeSpan = regexp.MustCompile("`([^`]+)`")

// words lists the code spans of a cell.
func words(cell string) []string {
	var out []string
	for _, m := range codeSpan.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

// fieldSet reads a cell of fields: `name`, `error?` (there only when it
// applies); "-" is none.
func fieldSet(cell string) map[string]bool {
	set := map[string]bool{}
	for _, w := range words(cell) {
		name, optional := strings.CutSuffix(w, "?")
		set[name] = !optional
	}
	return set
}

// invocation is how the contract test runs one verb.
type invocation struct {
	command string
	// args run the verb, without -o json; -c is replaced by a missing
	// file to check the exit code of a node-file problem.
	args []string
	// blocks is set for a verb that runs until Ctrl-C (port-forward): it
	// is stopped once it printed a document.
	blocks bool
	// stream, when set, are the args of the verb's streaming form
	// (--follow, --watch), stopped after its first document.
	stream []string
}

// contractInvocations are the verbs as the test runs them, in an order
// that works (wins verify after wins): against a simnode with three
// services and wins, a Hyper-V host with a VM, and (unless -short) a
// control plane to join.
func contractInvocations(t *testing.T) []invocation {
	t.Helper()
	fx := newKubeFixture(t)
	cfg, cache := fx.config, fx.cache
	swapFlags := []string{"--stop-timeout", "300ms", "--start-timeout", "3s", "--settle", "0", "--health-timeout", "500ms"}
	winsFile := winsNodeFile(t, fx.ts, "", "MZ rancher/wins v0.15.1\n")
	lab, _ := hypervLab(t)
	vmFile := lab.file(t, "guest", hypervVMSpec)
	local := filepath.Join(t.TempDir(), "contract.txt")
	if err := os.WriteFile(local, []byte("contract\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	kube := append([]string{"kubernetes", "-c", cfg, "--cache-dir", cache, "--only", "kubelet"}, swapFlags...)
	logs := []string{"logs", "-c", cfg, "sim", "kubelet"}
	invs := []invocation{
		{command: "version", args: []string{"version"}},
		{command: "config validate", args: []string{"config", "validate", "-c", cfg}},
		{command: "setup", args: []string{"setup", "-c", cfg}},
		{command: "kubernetes", args: kube, stream: append(slices.Clone(kube), "--watch")},
		{command: "status", args: []string{"status", "-c", cfg, "--cache-dir", cache}},
		{command: "logs", args: logs, stream: append(slices.Clone(logs), "--follow", "--interval", "100ms")},
		{command: "exec", args: []string{"exec", "-c", cfg, "sim", "--", "hostname"}},
		{command: "ssh", args: []string{"ssh", "-c", cfg, "sim", "--", "hostname"}},
		{command: "cp", args: []string{"cp", "-c", cfg, local, `sim:C:\k\contract.txt`}},
		{command: "port-forward", args: []string{"port-forward", "-c", cfg, "sim", ":10250"}, blocks: true},
		{command: "restart", args: append([]string{"restart", "-c", cfg, "sim", "kube-proxy"}, swapFlags...)},
		{command: "wins", args: []string{"wins", "-c", winsFile, "--settle", "100ms"}},
		{command: "wins verify", args: []string{"wins", "verify", "-c", winsFile}},
		{command: "wins uninstall", args: []string{"wins", "uninstall", "-c", winsFile}},
		{command: "reboot", args: []string{"reboot", "-c", cfg, "sim"}},
		{command: "vm status", args: []string{"vm", "status", "-c", vmFile}},
		{command: "vm snapshot", args: []string{"vm", "snapshot", "-c", vmFile, "contract"}},
		{command: "vm snapshots", args: []string{"vm", "snapshots", "-c", vmFile}},
		{command: "vm revert", args: []string{"vm", "revert", "-c", vmFile, "contract"}},
		{command: "vm ip", args: []string{"vm", "ip", "-c", vmFile}},
		{command: "vm stop", args: []string{"vm", "stop", "-c", vmFile}},
		{command: "vm start", args: []string{"vm", "start", "-c", vmFile}},
	}
	if !testing.Short() {
		jf := newJoinFixture(t)
		invs = append(invs, invocation{command: "join", args: []string{"join", "-c", jf.config}},
			invocation{command: "rollout", args: []string{"rollout", "-c", jf.rolloutFile(t), "--cache-dir", filepath.Join(jf.dir, "cache")}})
	}
	return invs
}

// runContract runs swdt with args; a run that blocks, or streams, is
// stopped once it printed a line.
func runContract(t *testing.T, args []string, stopAfterALine bool) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
	}()
	if stopAfterALine {
		waitFor(t, func() bool { return strings.Contains(out.String(), "\n") })
		cancel()
	}
	select {
	case code := <-done:
		return code, out.String(), errOut.String()
	case <-time.After(2 * time.Minute):
		t.Fatalf("swdt %s did not end\n%s", strings.Join(args, " "), errOut.String())
		return 0, "", ""
	}
}

// TestJSONContract runs every verb with -o json and checks its document
// against the table of docs/reference.md: its kind, its fields and each
// node's, its result, one document per line when it streams, and its
// exit codes and documents, of success, of a node it cannot reach (alone,
// and beside one that works) and of a usage or node-file problem.
func TestJSONContract(t *testing.T) {
	// The invocations give swdt a cache of their own (XDG_CACHE_HOME); the
	// control plane's binaries stay where they were built.
	t.Setenv("SWDT_CLUSTER_BIN", clustertest.BinDir())
	rows := map[string]contractRow{}
	for _, r := range readContract(t) {
		if _, dup := rows[r.command]; dup {
			t.Errorf("%s lists %s twice", referenceDoc, r.command)
		}
		rows[r.command] = r
	}
	for _, c := range jsonCommands(newRootCommand(&env{})) {
		if _, ok := rows[c]; !ok {
			t.Errorf("%s has no row for swdt %s", referenceDoc, c)
		}
	}
	invs := contractInvocations(t)
	for _, inv := range invs {
		row, ok := rows[inv.command]
		if !ok {
			t.Errorf("%s has no row for swdt %s", referenceDoc, inv.command)
			continue
		}
		delete(rows, inv.command)
		t.Run(inv.command, func(t *testing.T) {
			code, out, errOut := runContract(t, jsonArgs(inv.args), inv.blocks)
			if !slices.Contains(row.codes, code) || code != exitcode.OK {
				t.Fatalf("exit %d, want 0 (listed: %v)\n%s", code, row.codes, errOut)
			}
			var doc map[string]any
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("stdout is not one JSON document: %v\n%s", err, out)
			}
			checkDocument(t, row, doc)
			if inv.blocks && strings.Count(out, "\n") != 1 {
				t.Errorf("not one line:\n%s", out)
			}
			if row.streams != (inv.stream != nil) {
				t.Fatalf("the table says streams=%t", row.streams)
			}
			if inv.stream != nil {
				_, out, errOut := runContract(t, jsonArgs(inv.stream), true)
				lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
				for _, l := range lines {
					var doc map[string]any
					if err := json.Unmarshal([]byte(l), &doc); err != nil {
						t.Fatalf("streaming: a line is not a JSON document: %v\n%s\n%s", err, out, errOut)
					}
					checkDocument(t, row, doc)
				}
			}
			if alone, beside := unreachableNode(t, inv); alone != nil {
				checkUnreached(t, row, runFailing(t, row, "an unreachable node", alone, exitcode.Failure))
				if len(row.nodeFields) > 0 {
					// Beside a node that works: both reported, exit 3.
					doc := runFailing(t, row, "an unreachable node beside one that works", beside, exitcode.Partial)
					nodes, _ := doc["nodes"].([]any)
					var works, unreached []any
					for _, n := range nodes {
						if m, _ := n.(map[string]any); m["name"] == unreachableName {
							unreached = append(unreached, n)
						} else {
							works = append(works, n)
						}
					}
					if len(works) != 1 || len(unreached) != 1 {
						t.Fatalf("an unreachable node beside one that works: nodes %v", nodes)
					}
					doc["nodes"] = works
					checkDocument(t, row, maps.Clone(doc))
					doc["nodes"] = unreached
					checkUnreached(t, row, doc)
				}
			}
			for what, args := range usageProblems(inv) {
				if code, _, errOut := runContract(t, jsonArgs(args), false); code != exitcode.Usage || !slices.Contains(row.codes, code) {
					t.Errorf("%s: exit %d, want %d (listed: %v)\n%s", what, code, exitcode.Usage, row.codes, errOut)
				}
			}
		})
	}
	// The one verb that prints no JSON says so, rather than printing
	// something else.
	if code, out, errOut := runContract(t, jsonArgs([]string{"config", "init"}), false); code != exitcode.Usage || out != "" || !strings.Contains(errOut, "no JSON form") {
		t.Errorf("config init -o json: exit %d, want %d and a refusal\n%s%s", code, exitcode.Usage, out, errOut)
	}
	for c := range rows {
		if (c == "join" || c == "rollout") && testing.Short() {
			continue
		}
		t.Errorf("swdt %s is in %s but the test does not run it", c, referenceDoc)
	}
}

// runFailing runs swdt with args and -o json, checks that it exits with
// want (a code row lists), and returns the one document it printed; what
// names the case.
func runFailing(t *testing.T, row contractRow, what string, args []string, want int) map[string]any {
	t.Helper()
	code, out, errOut := runContract(t, jsonArgs(args), false)
	if code != want || !slices.Contains(row.codes, code) {
		t.Errorf("%s: exit %d, want %d (listed: %v)\n%s", what, code, want, row.codes, errOut)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%s: stdout is not one JSON document: %v\n%s\n%s", what, err, out, errOut)
	}
	return doc
}

// jsonArgs puts -o json (and --no-color) before the command, so that
// they are swdt's and not a remote program's.
func jsonArgs(args []string) []string {
	return append([]string{"-o", "json", "--no-color"}, args...)
}

// usageProblems are args of inv that must exit 2: an unknown flag, and
// a node file that does not exist.
func usageProblems(inv invocation) map[string][]string {
	words := len(strings.Fields(inv.command))
	out := map[string][]string{
		"an unknown flag": append(append(slices.Clone(inv.args[:words]), "--no-such-flag"), inv.args[words:]...),
	}
	if i := slices.Index(inv.args, "-c"); i >= 0 {
		missing := slices.Clone(inv.args)
		missing[i+1] = filepath.Join(os.TempDir(), "no-such-dir-swdt", "node.yaml")
		out["a node file that does not exist"] = missing
	}
	return out
}

// unreachableName is the node that nothing answers for.
const unreachableName = "unreachable"

// unreachableNode returns inv's args with its node file's node at an
// address where nothing listens, and with that node (renamed
// unreachableName) after the file's own; both files are written beside
// inv's, whose relative sources still resolve. It returns nil for a verb
// that reaches no node over SSH.
func unreachableNode(t *testing.T, inv invocation) (alone, beside []string) {
	t.Helper()
	i := slices.Index(inv.args, "-c")
	if i < 0 || inv.command == "config validate" || strings.HasPrefix(inv.command, "vm ") || inv.command == "rollout" {
		return nil, nil
	}
	file := inv.args[i+1]
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	host := regexp.MustCompile(`(?m)^(    hostname: ).*$`)
	name := regexp.MustCompile(`(?m)^(metadata:\n  name: ).*$`)
	if !host.Match(raw) || !name.Match(raw) {
		t.Fatalf("%s has no node name and hostname to change", file)
	}
	unreachable := host.ReplaceAll(raw, []byte("${1}"+strconv.Quote(closed)))
	write := func(prefix string, content []byte) []string {
		args := slices.Clone(inv.args)
		args[i+1] = filepath.Join(filepath.Dir(file), prefix+filepath.Base(file))
		if err := os.WriteFile(args[i+1], content, 0o644); err != nil {
			t.Fatal(err)
		}
		return args
	}
	both := append(append(slices.Clone(raw), "\n---\n"...), name.ReplaceAll(unreachable, []byte("${1}"+unreachableName))...)
	return write("unreachable-", unreachable), write("beside-", both)
}

// checkUnreached checks the document of a verb whose node could not be
// reached against row: its kind and fields as checkDocument does, but the
// node failed with an error and has nothing else (the table's "a node that
// could not be reached has only name, result and error; a one-node verb
// that failed before its report has result, node and error").
func checkUnreached(t *testing.T, row contractRow, doc map[string]any) {
	t.Helper()
	if doc["apiVersion"] != "windows.k8s.io/v1alpha1" || doc["kind"] != row.kind {
		t.Errorf("apiVersion/kind = %v/%v, want %s", doc["apiVersion"], doc["kind"], row.kind)
	}
	checkNoNull(t, "", doc)
	node, only := doc, map[string]bool{"result": true, "node": true, "error": true}
	if len(row.nodeFields) > 0 {
		delete(doc, "apiVersion")
		delete(doc, "kind")
		checkFields(t, "the document", row.fields, doc)
		nodes, _ := doc["nodes"].([]any)
		if len(nodes) != 1 {
			t.Fatalf("nodes = %v, want the one node", doc["nodes"])
		}
		node, _ = nodes[0].(map[string]any)
		only = map[string]bool{"name": true, "result": true, "error": true}
	} else {
		// A one-node verb may say more than it must, all of it listed.
		for f := range node {
			if _, listed := row.fields[f]; !listed && f != "apiVersion" && f != "kind" {
				t.Errorf("the document has %s, which the table does not list", f)
			}
		}
	}
	for f := range only {
		if _, ok := node[f]; !ok {
			t.Errorf("the failed node lacks %s: %v", f, node)
		}
	}
	if len(row.nodeFields) > 0 {
		for f := range node {
			if !only[f] {
				t.Errorf("the failed node has %s = %v; the table says only name, result and error", f, node[f])
			}
		}
	}
	if !slices.Contains(row.results, "failed") {
		t.Errorf("the table does not list failed among the results %v", row.results)
	}
	if msg, _ := node["error"].(string); node["result"] != "failed" || !strings.Contains(msg, "connect") {
		t.Errorf("result %v, error %q; want failed and the connection's error", node["result"], node["error"])
	}
}

// jsonCommands lists the commands that print JSON: every runnable one
// but help, completion and config init, which print text.
func jsonCommands(c *cobra.Command) []string {
	var out []string
	for _, sub := range c.Commands() {
		path := strings.TrimPrefix(sub.CommandPath(), "swdt ")
		switch {
		case sub.HasSubCommands():
			out = append(out, jsonCommands(sub)...)
		case path == "help" || path == "config init" || strings.HasPrefix(path, "completion"):
		default:
			out = append(out, path)
		}
	}
	return out
}

// checkDocument checks doc against row.
func checkDocument(t *testing.T, row contractRow, doc map[string]any) {
	t.Helper()
	if doc["apiVersion"] != "windows.k8s.io/v1alpha1" || doc["kind"] != row.kind {
		t.Errorf("apiVersion/kind = %v/%v, want %s", doc["apiVersion"], doc["kind"], row.kind)
	}
	delete(doc, "apiVersion")
	delete(doc, "kind")
	checkFields(t, "the document", row.fields, doc)
	if r, ok := doc["result"]; ok && !slices.Contains(row.results, r.(string)) {
		t.Errorf("result %v, the table says %v", r, row.results)
	}
	if len(row.nodeFields) > 0 {
		nodes, _ := doc["nodes"].([]any)
		if len(nodes) == 0 {
			t.Fatalf("no nodes: %v", doc)
		}
		for _, n := range nodes {
			node := n.(map[string]any)
			checkFields(t, "a node", row.nodeFields, node)
			if r, _ := node["result"].(string); !slices.Contains(row.results, r) {
				t.Errorf("node result %q, the table says %v", r, row.results)
			}
		}
	}
	checkNoNull(t, "", doc)
}

// checkFields checks that obj has every field of want that is always
// there, and no other.
func checkFields(t *testing.T, what string, want map[string]bool, obj map[string]any) {
	t.Helper()
	for f, always := range want {
		if _, ok := obj[f]; always && !ok {
			t.Errorf("%s lacks %s", what, f)
		}
	}
	for f := range obj {
		if _, ok := want[f]; !ok {
			t.Errorf("%s has %s, which the table does not list", what, f)
		}
	}
}

// checkNoNull checks that no list (or anything) in v is null.
func checkNoNull(t *testing.T, path string, v any) {
	t.Helper()
	switch v := v.(type) {
	case nil:
		t.Errorf("%s is null", path)
	case map[string]any:
		for k, e := range v {
			checkNoNull(t, path+"."+k, e)
		}
	case []any:
		for i, e := range v {
			checkNoNull(t, path+"["+strconv.Itoa(i)+"]", e)
		}
	}
}
