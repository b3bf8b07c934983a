package cli

import (
	"fmt"

	"github.com/redlockctl/redlockctl/inspect/export"
)

// version and revision are set by a release build (.goreleaser.yaml: -ldflags
// "-X github.com/redlockctl/redlockctl/internal/app/cli.version=v0.2.0 -X ...cli.revision=COMMIT");
// empty, the module version and the VCS revision from the build information are used.
var version, revision string

func init() {
	export.Build = Version().BuildInfo // redlockctl_build_info, dump -o prometheus included
}

// BuildInfo is what `redlockctl version` prints and redlockctl_build_info exports.
type BuildInfo struct{ export.BuildInfo }

// Version returns this build's version (the release's, else the module's), VCS
// revision (with -dirty for a modified tree) and Go version.
func Version() BuildInfo {
	b := export.ReadBuildInfo()
	if version != "" {
		b.Version = version
	}
	if revision != "" {
		b.Revision = revision
	}
	return BuildInfo{b}
}

// String is "redlockctl VERSION (revision REV, GOVERSION)".
func (b BuildInfo) String() string {
	return fmt.Sprintf("redlockctl %s (revision %s, %s)", b.Version, b.Revision, b.GoVersion)
}
