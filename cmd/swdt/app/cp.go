package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/pkg/daytwo"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ui"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

func newCpCommand(e *env) *cobra.Command {
	limits := cpLimits{entries: daytwo.DefaultCopyEntries, depth: daytwo.DefaultCopyDepth, bytes: byteSize(daytwo.DefaultCopyBytes)}
	cmd := &cobra.Command{
		Use:   "cp SRC DST",
		Short: "Copy files and folders to or from a node",
		Long: `Copy a file or a folder (with everything in it) between this machine and
a node, over the node's SSH connection (SFTP), as scp -r or kubectl cp do.
One of SRC and DST is NODE:PATH, with PATH a Windows path on the node
(quote it for the shell: 'node1:C:\k\kubelet.log'); the other is a local
path. ":PATH" (no node name) means the node --node names, or the file's
only node. A letter before the colon is a drive (C:\x), and a colon after
a slash is part of a local path (./a:b). A PATH written with slashes
(C:/k, or /srv/k on a Linux OpenSSH server) keeps them.

A file goes into DST when DST is an existing folder, else becomes DST; a
folder goes into DST when DST is an existing folder, else becomes DST.
The folder DST is in must exist. Each file is written under a temporary
name and renamed into place once complete, so a failed copy never leaves
half a file at DST. A relative PATH on the node is relative to the login
user's home folder. In a local folder, a link to a file sends the file and
a link to a folder is skipped with a warning.

--cluster-node NAME copies to or from the Node NAME of the cluster a
rollout file names, through the Kubernetes API with no SSH (swdt's
HostProcess pod on it, and pods/exec): NODE is then NAME, or left out.

Progress is shown on a terminal; -o json prints a summary (every file
written, with its size).

What the node sends is not trusted: every name in a folder copied from the
node must be one file name on any OS (no .., no \ or /, no drive, no
reserved device name, no control or direction characters), and a copy
from the node stops at --max-entries files and folders, --max-depth
levels and --max-bytes of data, naming the limit it reached.

Exit codes: 0 copied; 1 the copy failed part-way or the node could not be
reached; 2 usage or config error, a missing SRC or a missing folder for
DST (nothing copied).`,
		Example: `  swdt cp 'node1:C:\var\log\kubelet\kubelet.log' .
  swdt cp ./kubelet-config.yaml 'node1:C:\var\lib\kubelet\config.yaml'
  swdt cp 'node1:C:\ProgramData\containerd\crash' ./crash
  swdt cp -o json ./manifests ':C:\k\manifests'`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return exitcode.WithCode(exitcode.Usage, fmt.Errorf("swdt cp needs a source and a destination, one of them NODE:PATH: %s", cmd.Use))
			}
			return nil
		},
		ValidArgsFunction: e.completeCopyArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCp(cmd.Context(), e, args[0], args[1], limits)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&limits.entries, "max-entries", limits.entries, "most files and folders a copy from the node creates")
	fl.IntVar(&limits.depth, "max-depth", limits.depth, "deepest folder level a copy from the node creates")
	fl.Var(&limits.bytes, "max-bytes", "most data a copy from the node writes, in bytes or as a quantity such as 500Mi or 4Gi")
	e.addClusterNodeFlag(cmd)
	return cmd
}

// cpLimits are swdt cp's bounds on a copy from the node.
type cpLimits struct {
	entries, depth int
	bytes          byteSize
}

// copyArg is one argument of swdt cp.
type copyArg struct {
	remote bool
	node   string // "" for the default node
	path   string
}

// parseCopyArg tells NODE:PATH from a local path.
func parseCopyArg(s string) copyArg {
	i := strings.IndexByte(s, ':')
	if i < 0 || i == 1 && isLetter(s[0]) || strings.ContainsAny(s[:i], `/\`) {
		return copyArg{path: s}
	}
	return copyArg{remote: true, node: s[:i], path: s[i+1:]}
}

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

func runCp(ctx context.Context, e *env, srcArg, dstArg string, limits cpLimits) error {
	if limits.entries <= 0 || limits.depth <= 0 {
		return exitcode.WithCode(exitcode.Usage, fmt.Errorf("--max-entries and --max-depth must be more than 0"))
	}
	src, dst := parseCopyArg(srcArg), parseCopyArg(dstArg)
	switch {
	case src.remote == dst.remote && src.remote:
		return exitcode.WithCode(exitcode.Usage, fmt.Errorf("swdt cp copies between this machine and a node: both %s and %s are on nodes; copy to this machine first", srcArg, dstArg))
	case src.remote == dst.remote:
		return exitcode.WithCode(exitcode.Usage, fmt.Errorf("swdt cp copies between this machine and a node: one of %s and %s must be NODE:PATH (for example node1:C:\\k)", srcArg, dstArg))
	}
	remote := src
	if dst.remote {
		remote = dst
	}
	if remote.path == "" {
		return exitcode.WithCode(exitcode.Usage, fmt.Errorf("name a path on the node after %q, for example %s:C:\\k", remote.node+":", remote.node))
	}
	var named []string
	if remote.node != "" {
		named = []string{remote.node}
	}
	spec, _, err := e.pickNode("cp", named, true)
	if err != nil {
		return err
	}
	p := e.sharedProgress()
	opts := daytwo.CopyOptions{Warn: func(msg string) { p.Warn("%s", msg) },
		Limits: daytwo.CopyLimits{Entries: limits.entries, Depth: limits.depth, Bytes: int64(limits.bytes)}}
	if e.ui.Format() != ui.FormatJSON {
		opts.Transfer = func(path string, size int64) (func(int64), func()) {
			t := p.Transfer(path, size)
			return t.Update, t.End
		}
	}
	rep, err := daytwo.Copy(ctx, spec, e.connect, src.path, dst.path, dst.remote, opts)
	return firstErr(err, report.PrintCopy(e.ui, spec.Name, rep, err))
}

// completeCopyArg completes NODE: with the node names of the -c file.
func (e *env) completeCopyArg(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if strings.Contains(toComplete, ":") || len(args) > 1 {
		return nil, cobra.ShellCompDirectiveDefault
	}
	names, _ := e.completeNode(cmd, nil, toComplete)
	for i, n := range names {
		names[i] = n + ":"
	}
	return names, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveDefault
}
