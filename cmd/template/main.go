// Command template writes template.yaml, the SAM template, from the
// deployment's description (internal/deploy), and the deploy-time table
// of docs/deploy.md from its parameters: `make template`. Both are
// committed; internal/deploy/cfn's TestTemplateYAML_IsWhatMakeTemplateWrites
// and TestDeployTimeTable_IsWhatMakeTemplateWrites fail when they are not
// what this writes.
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
	page := flag.String("docs", "docs/deploy.md", "the page whose deploy-time table to write (empty: none)")
	flag.Parse()
	d := deploy.Describe()
	t, err := cfn.SAM(d)
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
	if err == nil && *page != "" {
		err = writeTable(*page, d)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "template:", err)
		os.Exit(1)
	}
}

// writeTable rewrites page's deploy-time table.
func writeTable(page string, d deploy.Deployment) error {
	b, err := os.ReadFile(page)
	if err != nil {
		return err
	}
	out, ok := cfn.WithDeployTimeTable(string(b), d)
	if !ok {
		return fmt.Errorf("%s: no deploy-time table markers (%s)", page, cfn.TableStart)
	}
	return os.WriteFile(page, []byte(out), 0o644)
}
