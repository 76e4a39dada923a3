package sealed

import (
	"strings"
	"testing"
)

// A token opens under the key and purpose it was sealed with, or the
// previous key during a rotation; never under another purpose or key,
// nor altered, nor past MaxTokenLen.
func TestSealOpen_KeyPurposeAndRotation(t *testing.T) {
	k1, k2 := []byte(strings.Repeat("a", 32)), []byte(strings.Repeat("b", 32))
	unsub := Keys{Purpose: "criticizer-unsubscribe", Current: k1}
	tok := unsub.Seal("v1\nr_x\n*")
	if p, ok := unsub.Open(tok); !ok || p != "v1\nr_x\n*" {
		t.Fatalf("Open(Seal) = %q, %t", p, ok)
	}
	rotated := Keys{Purpose: unsub.Purpose, Current: k2, Previous: k1}
	if _, ok := rotated.Open(tok); !ok {
		t.Error("a token of the previous key is refused during the rotation")
	}
	for name, k := range map[string]Keys{
		"another purpose": {Purpose: "criticizer-vote", Current: k1},
		"another key":     {Purpose: unsub.Purpose, Current: k2},
	} {
		if _, ok := k.Open(tok); ok {
			t.Errorf("%s opens the token", name)
		}
	}
	p, m, _ := strings.Cut(tok, ".")
	for name, bad := range map[string]string{
		"payload altered": Keys{Purpose: "x", Current: k1}.Seal("v1\nr_y\n*")[:len(p)] + "." + m,
		"mac altered":     p + "." + strings.Repeat("A", len(m)),
		"no mac":          p,
		"too long":        tok + strings.Repeat("A", MaxTokenLen),
	} {
		if _, ok := unsub.Open(bad); ok {
			t.Errorf("%s: opened", name)
		}
	}
}
