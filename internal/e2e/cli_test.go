package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/job"
)

var (
	cliOnce sync.Once
	cliPath string
	cliErr  error
)

// cli runs the real `criticizer` binary against this test's stack, with the
// environment an operator would set.
func (s *stack) cli(args ...string) (string, error) {
	s.t.Helper()
	cliOnce.Do(func() {
		dir, err := os.MkdirTemp("", "criticizer-cli")
		if err != nil {
			cliErr = err
			return
		}
		cliPath = filepath.Join(dir, "criticizer")
		out, err := exec.Command("go", "build", "-o", cliPath, "../../cmd/criticizer").CombinedOutput()
		if err != nil {
			cliErr = err
			s.t.Logf("%s", out)
		}
	})
	if cliErr != nil {
		s.t.Fatalf("build criticizer: %v", cliErr)
	}
	cmd := exec.Command(cliPath, args...)
	env := append(os.Environ(),
		config.EnvJobsTable+"="+s.res.JobsTable, config.EnvDeliveriesTable+"="+s.res.DeliveriesTable,
		config.EnvEvidenceMargin+"="+s.cfg.EvidenceMargin.String(), "CRITICIZER_OPERATOR=e2e-operator")
	for _, st := range job.Stages() {
		env = append(env, config.QueueEnv(st)+"="+s.res.Queues.Queue[st], config.DLQEnv(st)+"="+s.res.Queues.DLQ[st])
	}
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}
