package critic

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// benchDiff builds a realistic ~5,000-line diff: 25 files in three
// languages, each a mix of edits and new code with the occasional finding.
func benchDiff() string {
	var b strings.Builder
	exts := []string{"go", "ts", "py"}
	for f := range 25 {
		ext := exts[f%len(exts)]
		path := fmt.Sprintf("pkg/module%02d/file%02d.%s", f, f, ext)
		fmt.Fprintf(&b, "diff --git a/%s b/%s\nindex 1234567..89abcde 100644\n--- a/%s\n+++ b/%s\n", path, path, path, path)
		start := 1
		for h := range 4 {
			// Each hunk: 3 context, 10 removed, 35 added, 2 context = 50 lines.
			fmt.Fprintf(&b, "@@ -%d,15 +%d,40 @@ func section%d() {\n", start, start, h)
			for i := range 3 {
				fmt.Fprintf(&b, " \tctx%d := load(ctx, %d)\n", i, i)
			}
			for i := range 10 {
				fmt.Fprintf(&b, "-\told%d := legacyCompute(input, %d) // previous implementation\n", i, i)
			}
			for i := range 35 {
				switch {
				case i == 7 && h == 1:
					b.WriteString("+\t// TODO: remove once the migration is done\n")
				case i == 13 && f%5 == 0:
					b.WriteString("+\tfmt.Println(\"value\", v)\n")
				case i == 21 && h == 3:
					b.WriteString("+\tresult := strings.Join([]string{alpha, beta, gamma, delta, epsilon, zeta, eta, theta, iota, kappa, lambda, mu, nu, xi, omicron, pi, rho, sigma, tau, upsilon, phi, chi, psi, omega}, \", \")\n")
				default:
					fmt.Fprintf(&b, "+\tvalue%d, err := client.Fetch(ctx, request{ID: %d, Token: cfg.Token})\n", i, i)
				}
			}
			for i := range 2 {
				fmt.Fprintf(&b, " \treturn ctx%d, nil\n", i)
			}
			start += 100
		}
	}
	return b.String()
}

func BenchmarkOfflineReview(b *testing.B) {
	d := benchDiff()
	in := Input{ChangelistID: "I1", ReviewVersion: 1, Diff: d}
	critic := NewOffline()
	ctx := context.Background()
	b.SetBytes(int64(len(d)))
	b.ReportAllocs()
	b.ReportMetric(float64(strings.Count(d, "\n")), "lines/op")
	for b.Loop() {
		if _, err := critic.Review(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
}
