package dynamo

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// A dictionary never changes once shipped: the items it compressed are
// read with it as long as they are kept. Editing a dictionary file fails
// here; a new dictionary is a new file and version (compact.go).
// Rules: R-COST-5, R-COST-6.
func TestCompact_DictionariesFrozen(t *testing.T) {
	for name, c := range map[string]struct {
		dict []byte
		want string
	}{
		"message-v1.json":  {messageDictV1, "f4e3f8f3b21bf3159ff1d770e2afb74575978836d6fb27fa5e90b35c4d457b66"},
		"critique-v1.json": {critiqueDictV1, "aadf86c6685859b854459d06cf098e32b5f538ab3ed60fe30c0c3e5958105424"},
	} {
		sum := sha256.Sum256(c.dict)
		if got := hex.EncodeToString(sum[:]); got != c.want {
			t.Errorf("dict/%s changed (sha256 %s): what it compressed no longer reads; add a new version instead", name, got)
		}
	}
	for v, d := range messageDicts {
		if v == 0x1f {
			t.Fatalf("message dictionary version %#x is gzip's first byte", v)
		}
		if len(d) == 0 {
			t.Fatalf("message dictionary version %d is empty", v)
		}
	}
}

// What compact wrote reads back byte for byte with its dictionary, and
// the gzip written before reads too; a version without a dictionary is
// an error, never a wrong answer.
func TestCompact_RoundTripAndGzipBefore(t *testing.T) {
	b := append(bytes.Repeat([]byte(`{"file":"a.go","line":3,"severity":"warning"}`), 20), critiqueDictV1[:200]...)
	z, err := compact(b, critiqueDicts, dictV1)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := expand(z, critiqueDicts); err != nil || !bytes.Equal(got, b) {
		t.Fatalf("round trip: %v, equal %v", err, bytes.Equal(got, b))
	}
	if _, err := expand(z, map[byte][]byte{}); err == nil {
		t.Fatal("a stored form of an unknown version read")
	}
}
