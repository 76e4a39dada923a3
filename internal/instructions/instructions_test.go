package instructions_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/instructions"
)

// The object is YAML with the deployment's instructions and more per
// repository; what is longer than the critic takes, or a key it does not
// know (a typo that would silently drop instructions), is refused naming
// the key, never quoting the text.
func TestParse(t *testing.T) {
	long := strings.Repeat("é", config.MaxReviewInstructionsRunes+1)
	for _, tc := range []struct {
		name, doc string
		want      instructions.Set
		err       string
	}{
		{"empty", "", instructions.Set{}, ""},
		{"both", "instructions: |\n  Amounts are int64 cents.\n  \"Quoted\" and ünïcode.\nby_repository:\n  acme/store: Check the tenant.\n",
			instructions.Set{Deployment: "Amounts are int64 cents.\n\"Quoted\" and ünïcode.", ByRepository: map[string]string{"acme/store": "Check the tenant."}}, ""},
		{"typo", "instruction: x\n", instructions.Set{}, "field instruction not found"},
		{"long", "instructions: " + long + "\n", instructions.Set{}, "instructions: 2001 characters, at most 2000"},
		{"long repo", "by_repository:\n  acme/store: " + long + "\n", instructions.Set{}, `by_repository "acme/store": 2001 characters`},
		{"not yaml", "instructions: [\n", instructions.Set{}, "settings/review-instructions.yaml"},
	} {
		got, err := instructions.Parse([]byte(tc.doc))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, instructions.ErrInvalid) || strings.Contains(err.Error(), "éé") {
				t.Errorf("%s: %v, want ErrInvalid naming %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}
