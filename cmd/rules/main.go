// Command rules rewrites the "Proved by" line of every rule in
// docs/rules.md from the tests whose doc comments cite the rule's id
// (make rules). With -check it only reports whether the file is current.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/criticizer/criticizer/internal/rules"
)

func main() {
	check := flag.Bool("check", false, "report whether docs/rules.md is current; write nothing")
	flag.Parse()
	path := filepath.Join("docs", "rules.md")
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rules: run from the repository root:", err)
		os.Exit(2)
	}
	doc, err := rules.Parse(b)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rules:", err)
		os.Exit(2)
	}
	src, err := rules.Scan(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "rules:", err)
		os.Exit(2)
	}
	fresh := doc.WithProved(src.Tests)
	if bytes.Equal(fresh, b) {
		return
	}
	if *check {
		fmt.Fprintln(os.Stderr, "rules: docs/rules.md is out of date: run make rules")
		os.Exit(1)
	}
	if err := os.WriteFile(path, fresh, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "rules:", err)
		os.Exit(2)
	}
}
