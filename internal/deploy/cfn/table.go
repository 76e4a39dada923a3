package cfn

import (
	"fmt"
	"strings"

	"github.com/criticizer/criticizer/internal/deploy"
)

// The markers around docs/deploy.md's deploy-time table, which `make
// template` writes from the parameters.
const (
	TableStart = "<!-- the deploy-time table: written by make template from internal/deploy's parameters -->"
	TableEnd   = "<!-- end of the deploy-time table -->"
)

// DeployTimeTable is docs/deploy.md's deploy-time table: a row per
// parameter (its CDK context key, its template.yaml name, its default and
// its description), and the CDK app's asset directory.
func DeployTimeTable(d deploy.Deployment) string {
	var b strings.Builder
	b.WriteString("| CDK context | SAM parameter | default | what |\n|---|---|---|---|\n")
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, p := range d.Parameters {
		ctx := "`" + p.ContextKey() + "`"
		if p.SAMOnly {
			ctx = "—"
		}
		def := p.DefaultNote
		switch {
		case def != "":
		case p.Default == "":
			def = "—"
		default:
			def = "`" + p.Default + "`"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", ctx, p.Name, cell(def), cell(p.Description))
	}
	fmt.Fprintf(&b, "| `%s` | — | `../build` | the directory holding `<fn>/bootstrap` for every function (`make build` writes it) |\n", deploy.ContextAssetDir)
	return b.String()
}

// WithDeployTimeTable is page with the text between the table's markers
// replaced by the table; false when the page has no markers.
func WithDeployTimeTable(page string, d deploy.Deployment) (string, bool) {
	i, j := strings.Index(page, TableStart), strings.Index(page, TableEnd)
	if i < 0 || j < i {
		return page, false
	}
	return page[:i+len(TableStart)] + "\n" + DeployTimeTable(d) + page[j:], true
}
