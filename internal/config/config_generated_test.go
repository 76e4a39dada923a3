package config

import (
	"slices"
	"strings"
	"testing"
)

// The deployment's generated paths are a JSON array of globs, none by
// default; a bad one is refused at start, naming the variable and never
// echoing the value.
// Rules: R-CRITIC-7.
func TestGeneratedPaths_JSONGlobsNoneByDefaultBadRefused(t *testing.T) {
	read := func(v string) (Config, error) {
		return FromEnv(func(k string) string {
			if k == EnvGeneratedPaths {
				return v
			}
			return ""
		})
	}
	c, err := read("")
	if err != nil || c.GeneratedPaths != nil {
		t.Fatalf("unset: %v, %v; want none", c.GeneratedPaths, err)
	}
	c, err = read(` ["gen/**", " **/*.pb.go ", "{api,web}/dist/**"] `)
	if err != nil || !slices.Equal(c.GeneratedPaths, []string{"gen/**", "**/*.pb.go", "{api,web}/dist/**"}) {
		t.Fatalf("list: %v, %v", c.GeneratedPaths, err)
	}
	for _, v := range []string{"gen/**", `["[secret"]`, `[""]`, `["` + strings.Repeat("a", 201) + `"]`, `[` + strings.Repeat(`"a",`, 100) + `"a"]`} {
		_, err := read(v)
		if err == nil || !strings.Contains(err.Error(), EnvGeneratedPaths) || strings.Contains(err.Error(), "secret") {
			t.Errorf("%.20q: %v; want an error naming %s", v, err, EnvGeneratedPaths)
		}
	}
}
