package simnode

import (
	"context"

	"sigs.k8s.io/swdt/pkg/pwsh/ops"
)

// PSVersion is the Windows PowerShell version simnode reports.
const PSVersion = "5.1.20348.2227"

func opNodeFacts(_ context.Context, n *Node, _ ops.NodeFactsRequest) (ops.NodeFactsResponse, error) {
	str := func(name string) string {
		v, _ := n.RegistryValue(KeyCurrentVersion, name)
		return v.String
	}
	ubr, _ := n.RegistryValue(KeyCurrentVersion, "UBR")
	return ops.NodeFactsResponse{
		Hostname:       n.Hostname(),
		ProductName:    str("ProductName"),
		DisplayVersion: str("DisplayVersion"),
		CurrentBuild:   str("CurrentBuild"),
		UBR:            int(ubr.Number),
		Username:       n.Username(),
		IsAdmin:        n.IsAdmin(),
		PSVersion:      PSVersion,
	}, nil
}
