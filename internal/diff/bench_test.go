package diff

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParseString measures the parser on a ~5,000-line diff of 25
// files, the size of a large but ordinary code review.
func BenchmarkParseString(b *testing.B) {
	var sb strings.Builder
	for f := range 25 {
		fmt.Fprintf(&sb, "diff --git a/pkg/f%02d.go b/pkg/f%02d.go\nindex 1..2 100644\n--- a/pkg/f%02d.go\n+++ b/pkg/f%02d.go\n", f, f, f, f)
		for h := range 4 {
			fmt.Fprintf(&sb, "@@ -%d,15 +%d,40 @@ func f%d() {\n", 1+h*100, 1+h*100, h)
			sb.WriteString(strings.Repeat(" \tctx := load(ctx)\n", 3))
			sb.WriteString(strings.Repeat("-\told := legacyCompute(input) // previous implementation\n", 10))
			sb.WriteString(strings.Repeat("+\tvalue, err := client.Fetch(ctx, request{ID: id})\n", 35))
			sb.WriteString(strings.Repeat(" \treturn ctx, nil\n", 2))
		}
	}
	in := sb.String()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseString(in); err != nil {
			b.Fatal(err)
		}
	}
}
