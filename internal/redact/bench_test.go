package redact

import (
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/redact/redacttest"
)

// BenchmarkRedact measures a typical dead-letter error chain (4 KiB of stack
// trace with one secret) and the worst case of secrets throughout.
func BenchmarkRedact(b *testing.B) {
	frame := "github.com/criticizer/criticizer/internal/stage.(*Runner).run(0xc000123456)\n\t/build/internal/stage/run.go:88 +0x1d\n"
	typical := strings.Repeat(frame, 4096/len(frame)) + "Authorization: Bearer abc.def"
	dense := strings.Repeat(redacttest.Planted()+"\n", 4)
	for name, s := range map[string]string{"typical_4KiB": typical, "dense_secrets": dense} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				Text(s)
			}
		})
	}
}
