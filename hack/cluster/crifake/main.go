// Command crifake serves the container runtime interface (CRI) of
// upstream's fake runtime (k8s.io/cri-client/pkg/fake) on a loopback TCP
// port, for the kubelet.exe the Wine tier runs: Wine has no AF_UNIX
// sockets and gRPC over named pipes between Wine processes fails, so
// the kubelet reaches its runtime at tcp://ADDRESS. The runtime says it
// is not ready (RuntimeReady and NetworkReady false): the kubelet
// registers its Node, renews its Lease and runs no pod, as on a node
// whose containerd has no network yet.
//
// It prints the address it listens on, one line, and serves until it is
// killed or its standard input closes.
package main

import (
	"fmt"
	"io"
	"net"
	"os"

	"google.golang.org/grpc"
	kubeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-client/pkg/fake"
)

func main() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "crifake:", err)
		os.Exit(1)
	}
	rt := fake.NewFakeRemoteRuntime()
	rt.RuntimeService.FakeStatus = &kubeapi.RuntimeStatus{Conditions: []*kubeapi.RuntimeCondition{
		{Type: kubeapi.RuntimeReady, Status: false, Reason: "NoRuntime", Message: "the Wine tier runs no containers"},
		{Type: kubeapi.NetworkReady, Status: false, Reason: "NetworkPluginNotReady", Message: "cni plugin not initialized"},
	}}
	srv := grpc.NewServer()
	kubeapi.RegisterRuntimeServiceServer(srv, rt)
	kubeapi.RegisterImageServiceServer(srv, rt)
	fmt.Println(l.Addr().String())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		srv.Stop()
	}()
	if err := srv.Serve(l); err != nil && err != grpc.ErrServerStopped {
		fmt.Fprintln(os.Stderr, "crifake:", err)
		os.Exit(1)
	}
}
