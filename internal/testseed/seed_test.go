package testseed

import (
	"math/rand/v2"
	"testing"
)

// Without CRITICIZER_TEST_SEED a test draws from its own default, the
// same on every run; with it, from the value given.
func TestSeed_DefaultUnlessTheEnvironmentSaysOtherwise(t *testing.T) {
	t.Setenv(Env, "")
	if got := Seed(t, 42); got != 42 {
		t.Errorf("Seed = %d, want the default 42", got)
	}
	t.Setenv(Env, "7")
	if got := Seed(t, 42); got != 7 {
		t.Errorf("Seed = %d with %s=7", got, Env)
	}
}

// Rand(t, 1) draws what rand.NewPCG(1, 2) draws, so tests that used that
// generator keep their inputs.
func TestRand_KeepsThePCGStreamOfExistingTests(t *testing.T) {
	t.Setenv(Env, "")
	a, b := Rand(t, 1), rand.New(rand.NewPCG(1, 2))
	for i := range 100 {
		if x, y := a.Uint64(), b.Uint64(); x != y {
			t.Fatalf("draw %d: %d, want %d", i, x, y)
		}
	}
}
