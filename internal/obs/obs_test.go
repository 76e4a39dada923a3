package obs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/obs"
)

// Seed 001 §8.4: secrets and raw PII must not leave in error text; the
// logger redacts every error attribute, whoever logs it.
func TestLogger_RedactsErrorAttributes_001_8_4(t *testing.T) {
	var buf bytes.Buffer
	log := obs.NewLogger(&buf, "info")
	token := "ghp_" + strings.Repeat("A1b2", 9)
	err := fmt.Errorf("get diff_url: %w", errors.New(`Get "https://git.example/diff?access_token=`+token+`": refused for ann@example.com`))
	log.ErrorContext(context.Background(), "failed", "error", err)
	log.With("error", "plain string with bob@example.org").InfoContext(context.Background(), "also")
	out := buf.String()
	for _, secret := range []string{token, "ann@example.com", "bob@example.org"} {
		if strings.Contains(out, secret) {
			t.Fatalf("log output contains %q:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, "get diff_url") {
		t.Fatalf("the error's safe text was lost:\n%s", out)
	}
}
