// Package testseed gives a test that draws random inputs, jitter or fault
// choices its seed: the test's own fixed default, so every run draws the
// same and `make test` passes or fails the same way each time, or the value
// of CRITICIZER_TEST_SEED, to explore other draws or replay a failure. When
// the test fails, the seed is printed with the command line that replays it.
package testseed

import (
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// Env is the variable that overrides every test's default seed.
const Env = "CRITICIZER_TEST_SEED"

// Seed returns the seed for t: CRITICIZER_TEST_SEED if set, else def.
func Seed(t testing.TB, def uint64) uint64 {
	t.Helper()
	seed := def
	if v := os.Getenv(Env); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: not an unsigned integer", Env, v)
		}
		seed = n
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("random draws from seed %d: replay with %s=%d go test -run '^%s$'", seed, Env, seed, t.Name())
		}
	})
	return seed
}

// Rand returns a generator seeded by Seed(t, def): PCG(seed, seed+1), so a
// test that used rand.NewPCG(1, 2) keeps its draws with def 1.
func Rand(t testing.TB, def uint64) *rand.Rand {
	t.Helper()
	seed := Seed(t, def)
	return rand.New(rand.NewPCG(seed, seed+1))
}
