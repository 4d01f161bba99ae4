// Package v1alpha1 is the Node API of swdt, group/version
// windows.k8s.io/v1alpha1: the types a node file decodes into, their
// defaults and their validation.
//
// It must never read files, reach the network or print: loading a file is
// pkg/config's job, so that the API can be used and tested on its own.
//
// +k8s:deepcopy-gen=package
// +groupName=windows.k8s.io
package v1alpha1
