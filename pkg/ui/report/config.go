package report

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/ui"
)

// Config is the -o json document of swdt config validate.
type Config struct {
	Meta
	File  string `json:"file"`
	Valid bool   `json:"valid"`
	// Result is passed or failed, as Valid says.
	Result   string           `json:"result"`
	Nodes    []ConfigNode     `json:"nodes"`
	Warnings []config.Problem `json:"warnings"`
	Problems []config.Problem `json:"problems"`
}

// ConfigNode is one node of a Config document.
type ConfigNode struct {
	Name string `json:"name"`
	// Result is passed: a node is listed only when the file is valid.
	Result       string   `json:"result"`
	Host         string   `json:"host"`
	Port         int      `json:"port"`
	Provisioners []string `json:"provisioners"`
	Wins         bool     `json:"wins"`
	// VM is provider/name of spec.vm, when set.
	VM string `json:"vm,omitempty"`
}

// PrintConfig shows the outcome of loading the node file at path: a
// document (also when it is invalid), or a line per node and a success
// line. It returns err, the loader's.
func PrintConfig(u *ui.UI, path string, res *config.Result, err error) error {
	if u.Format() == ui.FormatJSON {
		if jerr := printJSON(u, NewConfig(path, res, err)); jerr != nil {
			return errors.Join(err, jerr)
		}
		return err
	}
	if err != nil {
		return err
	}
	rows := make([][]string, 0, len(res.Nodes))
	for _, s := range summarize(res.Nodes) {
		provs := strconv.Itoa(len(s.Provisioners))
		if len(s.Provisioners) > 0 {
			provs += " (" + strings.Join(s.Provisioners, ", ") + ")"
		}
		host := s.Host + ":" + strconv.Itoa(s.Port)
		switch {
		case s.Host == "" && s.VM != "":
			host = "from the " + s.VM + " VM"
		case s.Host == "":
			host = "each Node the rollout selects"
		}
		rows = append(rows, []string{s.Name, host, provs})
	}
	if err := u.Table([]string{"NODE", "HOST", "PROVISIONERS"}, rows); err != nil {
		return err
	}
	nodes := "1 node"
	if len(res.Nodes) != 1 {
		nodes = fmt.Sprintf("%d nodes", len(res.Nodes))
	}
	u.Success("%s is valid: %s", path, nodes)
	return nil
}

// NewConfig is the document of loading the node file at path.
func NewConfig(path string, res *config.Result, err error) Config {
	r := Config{Meta: meta(KindConfig), File: path, Nodes: []ConfigNode{}, Warnings: []config.Problem{}, Problems: []config.Problem{}}
	if res != nil {
		r.Valid = true
		r.File = res.Path
		r.Nodes = summarize(res.Nodes)
		r.Warnings = append(r.Warnings, res.Warnings...)
	}
	var cerr *config.Error
	if errors.As(err, &cerr) {
		r.Problems = cerr.Problems
	}
	r.Result = checkResult(r.Valid)
	return r
}

func summarize(nodes []v1alpha1.Node) []ConfigNode {
	out := make([]ConfigNode, len(nodes))
	for i, n := range nodes {
		host, port := n.Spec.Credentials.HostPort()
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		provs := make([]string, len(n.Spec.Kubernetes.Provisioners))
		for j, p := range n.Spec.Kubernetes.Provisioners {
			provs[j] = p.Name
		}
		out[i] = ConfigNode{Name: n.Name, Result: Passed, Host: host, Port: port, Provisioners: provs, Wins: n.Spec.Wins != nil}
		if v := n.Spec.VM; v != nil {
			out[i].VM = string(v.Provider) + "/" + v.Name
		}
	}
	return out
}
