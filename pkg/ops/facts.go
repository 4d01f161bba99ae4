package ops

// NodeFacts reports who and what the node is.
var NodeFacts = Op[NodeFactsRequest, NodeFactsResponse]{Name: "node-facts"}

// NodeFactsRequest takes no parameters.
type NodeFactsRequest struct{}

// NodeFactsResponse describes the node's OS and the account swdt runs as.
type NodeFactsResponse struct {
	// Hostname is the computer name.
	Hostname string `json:"hostname"`
	// ProductName is e.g. "Windows Server 2022 Datacenter".
	ProductName string `json:"productName"`
	// DisplayVersion is e.g. "21H2" (empty on older builds).
	DisplayVersion string `json:"displayVersion"`
	// CurrentBuild is the build number, e.g. "20348".
	CurrentBuild string `json:"currentBuild"`
	// UBR is the update build revision.
	UBR int `json:"ubr"`
	// Username is DOMAIN\user of the SSH session.
	Username string `json:"username"`
	// IsAdmin is true when the session holds Administrator rights.
	IsAdmin bool `json:"isAdmin"`
	// PSVersion is the PowerShell version running the op.
	PSVersion string `json:"psVersion"`
}
