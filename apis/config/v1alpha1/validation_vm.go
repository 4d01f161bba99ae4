package v1alpha1

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxVMAddressTimeout caps vm.addressTimeout: a VM that has no address
// after an hour is not booting.
const maxVMAddressTimeout = time.Hour

// libvirtTransports are the libvirt URI transports swdt can dial; unix is
// the default when the scheme names none.
var libvirtTransports = []string{"unix", "ssh"}

func validateVM(v *VMSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch v.Provider {
	case VMProviderLibvirt, VMProviderHyperV:
	case "":
		errs = append(errs, field.Required(p.Child("provider"), "libvirt or hyperv"))
	default:
		errs = append(errs, field.NotSupported(p.Child("provider"), v.Provider,
			[]VMProvider{VMProviderLibvirt, VMProviderHyperV}))
	}
	errs = append(errs, validateVMName(v, p.Child("name"))...)
	if v.Libvirt != nil {
		if v.Provider != VMProviderLibvirt {
			errs = append(errs, field.Forbidden(p.Child("libvirt"), "only with provider libvirt"))
		} else {
			errs = append(errs, validateLibvirtURI(v.Libvirt.URI, p.Child("libvirt", "uri"))...)
		}
	}
	if v.HyperV != nil {
		if v.Provider != VMProviderHyperV {
			errs = append(errs, field.Forbidden(p.Child("hyperv"), "only with provider hyperv"))
		} else if v.HyperV.Host != "" {
			errs = append(errs, validateSSHHost(v.HyperV.Host, p.Child("hyperv", "host"))...)
		}
	}
	if t := v.AddressTimeout; t != nil && (t.Duration <= 0 || t.Duration > maxVMAddressTimeout) {
		errs = append(errs, field.Invalid(p.Child("addressTimeout"), t.Duration.String(),
			fmt.Sprintf("must be more than 0 and at most %s, for example 3m", maxVMAddressTimeout)))
	}
	return errs
}

func validateVMName(v *VMSpec, p *field.Path) field.ErrorList {
	switch {
	case v.Name == "":
		return field.ErrorList{field.Required(p, "the VM's name as the hypervisor knows it")}
	case len(v.Name) > 253:
		return field.ErrorList{field.TooLong(p, v.Name, 253)}
	case hasControl(v.Name) || strings.TrimSpace(v.Name) != v.Name:
		return field.ErrorList{field.Invalid(p, v.Name, "must not contain control characters or leading or trailing spaces")}
	case v.Provider == VMProviderLibvirt && strings.Contains(v.Name, "/"):
		return field.ErrorList{field.Invalid(p, v.Name, "a libvirt domain name must not contain /")}
	}
	return nil
}

// validateLibvirtURI accepts driver[+transport]://[user@host[:port]]/path
// with a transport swdt can dial.
func validateLibvirtURI(s string, p *field.Path) field.ErrorList {
	const example = "for example qemu:///system or qemu+ssh://user@host/system"
	if hasSpaceOrControl(s) {
		return field.ErrorList{field.Invalid(p, s, "must not contain whitespace or control characters")}
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		return field.ErrorList{field.Invalid(p, s, "must be a libvirt URI, "+example)}
	}
	driver, transport, hasTransport := strings.Cut(u.Scheme, "+")
	if driver == "" {
		return field.ErrorList{field.Invalid(p, s, "names no hypervisor driver, "+example)}
	}
	if !hasTransport {
		transport = "unix"
		if u.Host != "" {
			transport = "tls" // libvirt's default for a remote host
		}
	}
	switch transport {
	case "unix":
		if u.Host != "" {
			return field.ErrorList{field.Invalid(p, s, "the unix transport reaches this machine only: leave out the host, or use +ssh")}
		}
	case "ssh":
		if u.Hostname() == "" {
			return field.ErrorList{field.Invalid(p, s, "the ssh transport needs a host, "+example)}
		}
		if port := u.Port(); port != "" {
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				return field.ErrorList{field.Invalid(p, s, "port must be a number from 1 to 65535")}
			}
		}
	default:
		return field.ErrorList{field.NotSupported(p, transport+" transport", libvirtTransports)}
	}
	return nil
}

// validateSSHHost accepts [user@]host[:port], [user@][IPv6]:port or an ssh
// config Host alias.
func validateSSHHost(s string, p *field.Path) field.ErrorList {
	if hasSpaceOrControl(s) {
		return field.ErrorList{field.Invalid(p, s, "must not contain whitespace or control characters")}
	}
	hostPort := s
	if i := strings.LastIndex(s, "@"); i >= 0 {
		if i == 0 {
			return field.ErrorList{field.Invalid(p, s, "the user before @ is empty")}
		}
		hostPort = s[i+1:]
	}
	c := CredentialsSpec{Hostname: hostPort}
	host, port := c.HostPort()
	if host == "" || strings.ContainsAny(host, "[]/@") {
		return field.ErrorList{field.Invalid(p, s, "must be [user@]host[:port] or a Host alias from ~/.ssh/config")}
	}
	if port < 1 || port > 65535 {
		return field.ErrorList{field.Invalid(p, s, "port must be a number from 1 to 65535")}
	}
	return nil
}
