package simnode

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"sigs.k8s.io/swdt/pkg/pwsh/ops"
)

// opHandler runs one op from its raw JSON parameters.
type opHandler func(ctx context.Context, n *Node, params json.RawMessage) (any, error)

// opEntry binds an op name to its handler.
type opEntry struct {
	name string
	fn   opHandler
}

// handle binds a handler to an op descriptor, so the handler's request
// and response types are the ones the client uses (pkg/pwsh/ops).
func handle[Req, Resp any](op ops.Op[Req, Resp], fn func(ctx context.Context, n *Node, req Req) (Resp, error)) opEntry {
	return opEntry{name: op.Name, fn: func(ctx context.Context, n *Node, params json.RawMessage) (any, error) {
		var req Req
		if len(params) > 0 && string(params) != "null" {
			if err := json.Unmarshal(params, &req); err != nil {
				return nil, fmt.Errorf("op %s: decode parameters: %w", op.Name, err)
			}
		}
		return fn(ctx, n, req)
	}}
}

// opTable lists every op simnode implements. To add an op: write its
// handler (in op_<area>.go) and add one line here. The contract test
// checks this table against the embedded scripts (ops.Names()).
func opTable() []opEntry {
	return []opEntry{
		handle(ops.NodeFacts, opNodeFacts),
		handle(ops.WinsInspect, opWinsInspect),
		handle(ops.WinsConfigWrite, opWinsConfigWrite),
		handle(ops.WinsRegister, opWinsRegister),
		handle(ops.WinsOrphansStop, opWinsOrphansStop),
		handle(ops.WinsVerify, opWinsVerify),
		handle(ops.WinsUninstall, opWinsUninstall),
		handle(ops.SetupFacts, opSetupFacts),
		handle(ops.RDPSet, opRDPSet),
		handle(ops.ChocoInstall, opChocoInstall),
		handle(ops.ChocoPackages, opChocoPackages),
		handle(ops.AuthorizedKeysAdd, opAuthorizedKeysAdd),
		handle(ops.ProvisionInspect, opProvisionInspect),
		handle(ops.FileHash, opFileHash),
		handle(ops.FilesRemove, opFilesRemove),
		handle(ops.ServiceSwap, opServiceSwap),
		handle(ops.SwapRecover, opSwapRecover),
	}
}

var opHandlers = func() map[string]opHandler {
	m := map[string]opHandler{}
	for _, e := range opTable() {
		if _, dup := m[e.name]; dup {
			panic("simnode: op registered twice: " + e.name)
		}
		m[e.name] = e.fn
	}
	return m
}()

// handlerOf finds the handler of a node op or of a Hyper-V host op.
func handlerOf(name string) opHandler {
	if h := opHandlers[name]; h != nil {
		return h
	}
	return hypervHandlers[name]
}

// OpNames lists the ops simnode implements, sorted.
func OpNames() []string {
	names := make([]string, 0, len(opHandlers))
	for n := range opHandlers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
