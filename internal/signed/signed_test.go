package signed

import (
	"strings"
	"testing"
)

// A token opens under the key and purpose it was signed with, or the
// previous key during a rotation; never under another purpose or key,
// nor altered, nor past MaxTokenLen.
func TestSealOpen_KeyPurposeAndRotation(t *testing.T) {
	k1, k2 := []byte(strings.Repeat("a", 32)), []byte(strings.Repeat("b", 32))
	unsub := Keys{Purpose: "criticizer-unsubscribe", Current: k1}
	tok := unsub.Sign("v1\nr_x\n*")
	if p, ok := unsub.Verify(tok); !ok || p != "v1\nr_x\n*" {
		t.Fatalf("Verify(Sign) = %q, %t", p, ok)
	}
	rotated := Keys{Purpose: unsub.Purpose, Current: k2, Previous: k1}
	if _, ok := rotated.Verify(tok); !ok {
		t.Error("a token of the previous key is refused during the rotation")
	}
	for name, k := range map[string]Keys{
		"another purpose": {Purpose: "criticizer-vote", Current: k1},
		"another key":     {Purpose: unsub.Purpose, Current: k2},
	} {
		if _, ok := k.Verify(tok); ok {
			t.Errorf("%s opens the token", name)
		}
	}
	p, m, _ := strings.Cut(tok, ".")
	for name, bad := range map[string]string{
		"payload altered": Keys{Purpose: "x", Current: k1}.Sign("v1\nr_y\n*")[:len(p)] + "." + m,
		"mac altered":     p + "." + strings.Repeat("A", len(m)),
		"no mac":          p,
		"too long":        tok + strings.Repeat("A", MaxTokenLen),
	} {
		if _, ok := unsub.Verify(bad); ok {
			t.Errorf("%s: opened", name)
		}
	}
}

// A short token opens in any case under its key and purpose (or the
// previous key during a rotation), never under another, nor altered, nor
// with a mac of another length.
func TestSealShort_CaseInsensitiveKeyPurposeAndRotation(t *testing.T) {
	k1, k2 := []byte(strings.Repeat("a", 32)), []byte(strings.Repeat("b", 32))
	reply := Keys{Purpose: "criticizer-reply", Current: k1}
	tok := reply.SignShort([]byte("payload-of-24-bytes-long"), 12)
	if tok != strings.ToLower(tok) || len(tok) != 58 {
		t.Fatalf("token %q: want 58 lower-case characters", tok)
	}
	for _, form := range []string{tok, strings.ToUpper(tok), strings.ToUpper(tok[:10]) + tok[10:]} {
		if p, ok := reply.VerifyShort(form, 12); !ok || string(p) != "payload-of-24-bytes-long" {
			t.Fatalf("VerifyShort(%q) = %q, %t", form, p, ok)
		}
	}
	if _, ok := (Keys{Purpose: reply.Purpose, Current: k2, Previous: k1}).VerifyShort(tok, 12); !ok {
		t.Error("a token of the previous key is refused during the rotation")
	}
	flip := []byte(tok)
	flip[3] ^= 1
	for name, c := range map[string]struct {
		k   Keys
		tok string
		mac int
	}{
		"another purpose": {Keys{Purpose: "criticizer-vote", Current: k1}, tok, 12},
		"another key":     {Keys{Purpose: reply.Purpose, Current: k2}, tok, 12},
		"altered":         {reply, string(flip), 12},
		"mac length":      {reply, tok, 11},
		"not base32":      {reply, tok[:20] + "1" + tok[21:], 12},
		"empty":           {reply, "", 12},
	} {
		if _, ok := c.k.VerifyShort(c.tok, c.mac); ok {
			t.Errorf("%s: opened", name)
		}
	}
}
