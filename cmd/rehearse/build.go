package main

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/criticizer/criticizer/internal/devstack"
)

// deployedArch is Lambda's architecture in template.yaml (Architectures:
// [arm64]) and make build's GOARCH.
const deployedArch = "arm64"

// builds are the bootstraps: the deployed ones (checked, not run, unless
// this machine is arm64) and the ones this machine runs.
type builds struct {
	run map[string]string // function → bootstrap for runtime.GOARCH
	rie string
}

// build builds the RIE and every bootstrap for linux/arm64 and for this
// machine's architecture, with make build's flags. The arm64 ones are
// checked to be static arm64 executables: what Lambda's provided.al2023
// on arm64 loads.
func build(ctx context.Context, o options) (builds, error) {
	var b builds
	if runtime.GOOS != "linux" {
		return b, fmt.Errorf("the Lambda Runtime Interface Emulator runs on Linux only (this is %s)", runtime.GOOS)
	}
	arches := []string{deployedArch}
	if runtime.GOARCH != deployedArch {
		arches = append(arches, runtime.GOARCH)
	}
	for _, arch := range arches {
		o.step("building the bootstraps for linux/%s", arch)
		paths, err := devstack.BuildDeployedBootstraps(ctx, ".", arch, filepath.Join(o.dir, "linux-"+arch))
		if err != nil {
			return b, err
		}
		if arch == deployedArch {
			for fn, p := range paths {
				if err := checkELF(p, elf.EM_AARCH64); err != nil {
					return b, fmt.Errorf("%s: %w", fn, err)
				}
			}
		}
		if arch == runtime.GOARCH {
			b.run = paths
		}
	}
	o.step("building the Runtime Interface Emulator (%s)", devstack.RIEVersion)
	dir := filepath.Join(o.dir, "rie")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return b, err
	}
	rie, err := devstack.BuildRIE(ctx, dir)
	if err != nil {
		return b, err
	}
	b.rie = rie
	return b, nil
}

// checkELF checks that path is a statically linked Linux executable for
// machine: no interpreter, so provided.al2023 runs it with no libc.
func checkELF(path string, machine elf.Machine) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("bootstrap %s: %w", path, err)
	}
	defer f.Close()
	if f.Machine != machine || f.Type != elf.ET_EXEC {
		return fmt.Errorf("bootstrap %s: %s %s, want an executable for %s", path, f.Machine, f.Type, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("bootstrap %s is dynamically linked (CGO_ENABLED=0 lost?)", path)
		}
	}
	return nil
}
