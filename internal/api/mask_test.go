package api

import "testing"

// Masked addresses show one character of the local part and of the domain
// and the domain's last label, by characters (never a broken UTF-8 byte).
// Rules: R-PRIVACY-1.
func TestMaskEmail(t *testing.T) {
	for in, want := range map[string]string{
		"ann.lee@example.com":    "a***@e***.com",
		"josé.núñez@example.com": "j***@e***.com",
		"élodie@bücher.example":  "é***@b***.example",
		"x@localhost":            "x***@l***",
		"noat":                   "***",
		"@example.com":           "***",
	} {
		if got := MaskEmail(in); got != want {
			t.Errorf("MaskEmail(%q) = %q, want %q", in, got, want)
		}
	}
}
