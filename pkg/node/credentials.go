package node

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/remote"
)

// RemoteConfig converts a node's credentials into pkg/remote's Config:
// the one place where the Node API meets the SSH layer. The password
// comes from passwordEnv when it names a variable that is set and not
// empty, else from password; when there is none, remote.Dial decides
// whether the keys can do without it. Paths are expected to be resolved
// by the config loader.
func RemoteConfig(spec v1alpha1.CredentialsSpec) (remote.Config, error) {
	cfg := remote.Config{
		Host:              spec.Hostname,
		User:              spec.Username,
		PrivateKeyFile:    spec.PrivateKey,
		KnownHostsFile:    spec.KnownHostsFile,
		HostKeyPolicy:     string(spec.HostKeyPolicy),
		DialTimeout:       remote.DefaultDialTimeout,
		KeepAliveInterval: remote.DefaultKeepAliveInterval,
	}
	if strings.TrimSpace(cfg.Host) == "" {
		return remote.Config{}, errors.New("credentials.hostname is empty")
	}
	cfg.Password, cfg.PasswordEnv = spec.Password, spec.PasswordEnv
	if v := os.Getenv(spec.PasswordEnv); spec.PasswordEnv != "" && v != "" {
		cfg.Password = v
	}
	switch spec.HostKeyPolicy {
	case "", v1alpha1.HostKeyPolicyStrict, v1alpha1.HostKeyPolicyAcceptNew, v1alpha1.HostKeyPolicyInsecure:
	default:
		return remote.Config{}, fmt.Errorf("credentials.hostKeyPolicy: unknown host key policy %q (want strict, accept-new or insecure)", spec.HostKeyPolicy)
	}
	return cfg, nil
}
