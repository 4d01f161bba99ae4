package machine

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The Windows Server releases a machine can be (Config.Release, simnode
// --windows-server). A new state is Server 2022.
const (
	Server2019 = "2019"
	Server2022 = "2022"
)

// firstPosixDeleteBuild is Windows 10 1903's build. From it on, DeleteFile
// frees a file's name at once even while another program holds the file
// open sharing delete access (POSIX semantics). Earlier builds, Server
// 2019 (1809, build 17763) among them, keep the name until the last such
// handle closes: the file is "delete pending", still listed in its folder,
// and opening, creating or renaming onto it fails with access denied.
const firstPosixDeleteBuild = 18362

// releaseValues are the CurrentVersion registry values of each release.
var releaseValues = map[string]struct {
	build, display, product, lab string
	ubr                          int64
}{
	Server2019: {"17763", "1809", "Windows Server 2019 Datacenter", "17763.1.amd64fre.rs5_release.180914-1434", 6414},
	Server2022: {"20348", "21H2", "Windows Server 2022 Datacenter", "20348.1.amd64fre.fe_release.210507-1500", 2227},
}

// setRelease makes the machine's version values those of release.
func (m *Machine) setRelease(release string) error {
	v, ok := releaseValues[release]
	if !ok {
		return fmt.Errorf("unknown Windows Server release %q: simnode plays %s or %s", release, Server2019, Server2022)
	}
	return m.update(func(s *State, _ time.Time) error {
		k := s.Registry[strings.ToLower(KeyCurrentVersion)]
		if k == nil {
			k = &RegistryKey{Path: KeyCurrentVersion, Values: map[string]*RegistryValue{}}
			s.Registry[strings.ToLower(KeyCurrentVersion)] = k
		}
		set := func(name, kind string, num int64, str string) {
			k.Values[strings.ToLower(name)] = &RegistryValue{Name: name, Kind: kind, Number: num, String: str}
		}
		set("CurrentBuildNumber", "String", 0, v.build)
		set("CurrentBuild", "String", 0, v.build)
		set("UBR", "DWord", v.ubr, "")
		set("DisplayVersion", "String", 0, v.display)
		set("ProductName", "String", 0, v.product)
		set("BuildLabEx", "String", 0, v.lab)
		if release == Server2019 {
			set("ReleaseId", "String", 0, "1809")
		} else {
			set("ReleaseId", "String", 0, "2009")
		}
		return nil
	})
}

// legacyDeleteLocked reports whether the machine's build keeps a deleted
// file's name while another program holds it open (before 1903).
func (m *Machine) legacyDeleteLocked() bool {
	k := m.st.Registry[strings.ToLower(KeyCurrentVersion)]
	if k == nil || k.Values["currentbuildnumber"] == nil {
		return false
	}
	build, err := strconv.Atoi(k.Values["currentbuildnumber"].String)
	return err == nil && build < firstPosixDeleteBuild
}
