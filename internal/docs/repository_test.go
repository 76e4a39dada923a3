package docs_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/docs"
)

// MaxTrackedFile is the largest file the repository tracks: sources,
// documents, fixtures and lock files, never a built binary (an `eval`
// binary of 18 MB was once committed by `go build ./cmd/eval`).
const MaxTrackedFile = 1 << 20

// No tracked file is over MaxTrackedFile, read from the index (what a
// commit would hold), not the working tree.
func TestRepository_NoFileOverOneMiB(t *testing.T) {
	root := repoRoot(t)
	list := exec.Command("git", "-C", root, "ls-files", "-s")
	out, err := list.Output()
	if err != nil {
		t.Skipf("no git index here (an archive, not a clone): %v", err)
	}
	var objects, paths []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		// <mode> <object> <stage>\t<path>
		meta, path, ok := strings.Cut(line, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 || f[0] == "160000" { // 160000: a submodule
			continue
		}
		objects, paths = append(objects, f[1]), append(paths, path)
	}
	check := exec.Command("git", "-C", root, "cat-file", "--batch-check=%(objectsize)")
	check.Stdin = strings.NewReader(strings.Join(objects, "\n") + "\n")
	sizes, err := check.Output()
	if err != nil {
		t.Fatalf("git cat-file: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(sizes))
	for i := 0; sc.Scan(); i++ {
		n, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
		if err != nil || i >= len(paths) {
			t.Fatalf("git cat-file answered %q", sc.Text())
		}
		if n > MaxTrackedFile {
			t.Errorf("%s is tracked and is %d bytes, over %d: a built binary? git rm --cached it and ignore it", paths[i], n, MaxTrackedFile)
		}
	}
}

// Every command's binary, as `go build ./cmd/<name>` writes it at the
// root, is ignored, so it cannot be committed by `git add .`.
func TestRepository_EveryCommandBinaryIgnored(t *testing.T) {
	root := repoRoot(t)
	if err := exec.Command("git", "-C", root, "rev-parse").Run(); err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	cmds, err := os.ReadDir(filepath.Join(root, "cmd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		if !c.IsDir() {
			continue
		}
		// check-ignore answers 0 when the path is ignored, 1 when not.
		ignored := exec.Command("git", "-C", root, "check-ignore", "-q", "--no-index", c.Name()+"/x").Run() == nil
		if fi, err := os.Stat(filepath.Join(root, c.Name())); err == nil && fi.IsDir() {
			// A directory of the repository's (bench/) by that name: go
			// build cannot write the binary there, and ignoring the name
			// would hide the directory's new files.
			if ignored {
				t.Errorf(".gitignore ignores the directory %s/ (a pattern for cmd/%s's binary?)", c.Name(), c.Name())
			}
			continue
		}
		if err := exec.Command("git", "-C", root, "check-ignore", "-q", "--no-index", c.Name()).Run(); err != nil {
			t.Errorf("go build ./cmd/%s writes ./%s, which .gitignore does not ignore", c.Name(), c.Name())
		}
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := docs.Root()
	if err != nil {
		t.Fatal(err)
	}
	return root
}
