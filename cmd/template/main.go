// Command template writes template.yaml, the SAM template, from the
// deployment's description (internal/deploy): `make template`. The file is
// committed; internal/deploy/cfn's TestTemplateYAML_IsWhatMakeTemplateWrites
// fails when it is not what this writes.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/criticizer/criticizer/internal/deploy"
	"github.com/criticizer/criticizer/internal/deploy/cfn"
)

func main() {
	out := flag.String("o", "template.yaml", "the file to write (- for standard output)")
	flag.Parse()
	t, err := cfn.SAM(deploy.Describe())
	if err == nil {
		var b []byte
		if b, err = t.YAML(); err == nil {
			if *out == "-" {
				_, err = os.Stdout.Write(b)
			} else {
				err = os.WriteFile(*out, b, 0o644)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "template:", err)
		os.Exit(1)
	}
}
