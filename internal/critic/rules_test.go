package critic

import (
	"strings"
	"testing"
)

func TestRuleTodoAdded(t *testing.T) {
	runRuleCases(t, RuleTodoAdded, SeverityInfo, []ruleCase{
		{"TODO comment", addFile("a.go", "package a", "// TODO: handle retries"), []int{2}},
		{"FIXME and HACK", addFile("a.py", "x = 1  # FIXME", "y = 2  # HACK(bob)"), []int{1, 2}},
		{"XXX", editFile("a.js", "// XXX this is wrong"), []int{10}},
		{"one finding per line", addFile("a.go", "// TODO FIXME both"), []int{1}},
		{"lower case todo is prose", addFile("a.go", "// the todo list"), nil},
		{"part of an identifier", addFile("a.go", "var TODOList, xFIXME = 1, 2"), nil},
		{"removed TODO is not flagged", "--- a/a.go\n+++ b/a.go\n@@ -1 +1 @@\n-// TODO\n+// done\n", nil},
		// A generated name counts when the base had it (R-CRITIC-7).
		{"generated file", editFile("api.pb.go", "// TODO"), nil},
		{"new file claiming a generated name", addFile("api.pb.go", "// TODO"), []int{1}},
	})
}

func TestRuleDebugPrint(t *testing.T) {
	runRuleCases(t, RuleDebugPrint, SeverityWarning, []ruleCase{
		{"Go fmt.Println", addFile("svc/h.go", "package svc", "\tfmt.Println(\"here\", x)"), []int{2}},
		{"Go builtin println", addFile("svc/h.go", "\tprintln(x)"), []int{1}},
		{"JS console.log", addFile("web/app.ts", "const x = 1;", "console.log(x);"), []int{2}},
		{"Python print", addFile("app/job.py", "def f():", "    print(result)"), []int{2}},
		{"Go fmt.Println in a command is output", addFile("cmd/tool/main.go", "\tfmt.Println(\"done\")"), nil},
		{"Go Sprintln is not printing", addFile("svc/h.go", "\ts := fmt.Sprintln(x)"), nil},
		{"Go method named Println", addFile("svc/h.go", "\tlog.Println(x)"), nil},
		{"commented out", addFile("web/app.js", "// console.log(x);"), nil},
		{"Python print in another language", addFile("README.md", "print(x)"), nil},
		{"Python pprint is not print", addFile("app/job.py", "    pprint(x)"), nil},
	})
}

func TestRuleDebuggerStatement(t *testing.T) {
	runRuleCases(t, RuleDebuggerStatement, SeverityWarning, []ruleCase{
		{"JS debugger", addFile("web/app.js", "function f() {", "  debugger;", "}"), []int{2}},
		{"Python pdb", addFile("app/job.py", "import pdb; pdb.set_trace()"), []int{1}},
		{"Python breakpoint", addFile("app/job.py", "    breakpoint()"), []int{1}},
		{"Ruby pry", addFile("app/models/user.rb", "    binding.pry"), []int{1}},
		{"word debugger in a string", addFile("web/app.js", "const msg = 'attach a debugger to continue';"), nil},
		{"pry in Go is unrelated", addFile("a.go", "binding.pry := 1"), nil},
	})
}

func TestRuleHardcodedSecret(t *testing.T) {
	runRuleCases(t, RuleHardcodedSecret, SeverityError, []ruleCase{
		{"AWS access key id", addFile("cfg.go", "const key = \""+fakeAWSKey+"\""), []int{1}},
		{"private key block", addFile("deploy/id_rsa", fakePrivateKey, "MIIEpAIBAAKCAQEA"), []int{1}},
		{"GitHub token", addFile("ci.yml", "token: "+fakeGitHub), []int{1}},
		{"Slack token", addFile("notify.py", "SLACK = '"+fakeSlack+"'"), []int{1}},
		{"Google API key", addFile("maps.js", "const k = '"+fakeGoogle+"';"), []int{1}},
		{"Stripe live key", addFile("pay.rb", "KEY = '"+fakeStripe+"'"), []int{1}},
		{"password assignment", addFile("db.py", "db_password = \""+fakePassword+"\""), []int{1}},
		{"api_key in JSON", addFile("conf.json", "{\"api_key\": \"9f8e7d6c5b4a\"}"), []int{1}},
		{"Go short declaration", addFile("c.go", "\tsecret := \"k8sd7f6g5h\""), []int{1}},
		{"password in URL", addFile("settings.py", "DB = 'postgres://admin:"+fakeURLPass+"@db.internal:5432/app'"), []int{1}},
		{"test fixtures may assign passwords", addFile("db_test.go", "\tpassword := \"hunter2hunter2\""), nil},
		{"but real token shapes count in tests too", addFile("db_test.go", "\tk := \""+fakeAWSKey+"\""), []int{1}},
		{"environment lookup", addFile("db.py", "password = os.environ['DB_PASSWORD']"), nil},
		{"template placeholder", addFile("cfg.yaml", "password: \"${DB_PASSWORD}\""), nil},
		{"documentation placeholder", addFile("cfg.yaml", "api_key: \"your-api-key-here\""), nil},
		{"comparison is not assignment", addFile("a.go", "if token == \"abcdefgh\" {"), nil},
		{"identifier containing token", addFile("a.go", "tokenType := \"Bearer\""), nil},
		{"URL without password", addFile("a.py", "URL = 'https://user@example.com/x'"), nil},
		{"too short for an AWS key", addFile("a.go", "x := \"AKIA1234\""), nil},
	})
}

func TestRuleMergeConflict(t *testing.T) {
	runRuleCases(t, RuleMergeConflict, SeverityError, []ruleCase{
		{"full conflict", addFile("a.go", "<<<<<<< HEAD", "x := 1", "=======", "x := 2", ">>>>>>> feature"), []int{1, 3, 5}},
		{"diff3 base marker", addFile("a.go", "<<<<<<< ours", "|||||||  base", "=======", ">>>>>>>"), []int{1, 2, 3, 4}},
		{"setext heading alone", addFile("doc.md", "Title", "======="), nil},
		{"longer arrows are not markers", addFile("a.txt", "<<<<<<<<<< not a marker"), nil},
	})
}

func TestRuleGoPanic(t *testing.T) {
	runRuleCases(t, RuleGoPanic, SeverityWarning, []ruleCase{
		{"panic in handler", addFile("svc/h.go", "func h() {", "\tpanic(\"boom\")", "}"), []int{2}},
		{"panic with error", editFile("svc/h.go", "\tif err != nil { panic(err) }"), []int{10}},
		{"test code may panic", addFile("svc/h_test.go", "\tpanic(\"boom\")"), nil},
		{"comment mentioning panic", addFile("svc/h.go", "// we never panic(ever)"), nil},
		{"trailing comment", addFile("svc/h.go", "x := 1 // not panic(x)"), nil},
		{"method named panic", addFile("svc/h.go", "\tt.panic(x)"), nil},
		{"identifier ending in panic", addFile("svc/h.go", "\tmustpanic(x)"), nil},
		{"not Go", addFile("a.py", "panic(x)"), nil},
	})
}

func TestRuleGoIgnoredError(t *testing.T) {
	runRuleCases(t, RuleGoIgnoredError, SeverityInfo, []ruleCase{
		{"blank close", addFile("svc/h.go", "\t_ = f.Close()"), []int{1}},
		{"two blanks", addFile("svc/h.go", "\t_, _ = fmt.Fprintf(w, \"x\")"), []int{1}},
		{"generic call", addFile("svc/h.go", "\t_ = Do[int](x)"), []int{1}},
		{"value not call", addFile("svc/h.go", "\t_ = unused"), nil},
		{"interface assertion", addFile("svc/h.go", "var _ io.Reader = (*T)(nil)"), nil},
		{"error is kept", addFile("svc/h.go", "\t_, err := f.Write(b)"), nil},
		{"test code", addFile("svc/h_test.go", "\t_ = f.Close()"), nil},
	})
}

func TestRuleTrailingWhitespace(t *testing.T) {
	runRuleCases(t, RuleTrailingWhitespace, SeverityInfo, []ruleCase{
		{"one finding per file at the first line", addFile("a.go", "x", "y ", "z\t", "w  "), []int{2}},
		{"per file", addFile("a.go", "a ") + addFile("b.go", "ok", "b "), []int{1, 2}},
		{"clean", addFile("a.go", "x", "  y"), nil},
		{"markdown line break", addFile("README.md", "line one  ", "line two"), nil},
		{"CRLF is not trailing whitespace", "--- a/a.go\r\n+++ b/a.go\r\n@@ -1 +1 @@\r\n-x\r\n+y\r\n", nil},
	})
}

func TestRuleLongLine(t *testing.T) {
	long := strings.Repeat("x", 201)
	runRuleCases(t, RuleLongLine, SeverityInfo, []ruleCase{
		{"one finding per file", addFile("a.go", "ok", long, long), []int{2}},
		{"exactly at the limit", addFile("a.go", strings.Repeat("x", 200)), nil},
		{"multibyte characters count once", addFile("a.go", strings.Repeat("é", 150)), nil},
		{"data file", addFile("fixtures.json", long), nil},
		{"minified bundle", addFile("static/app.min.js", long), nil},
	})
	runRuleCases(t, RuleLongLine, SeverityInfo, []ruleCase{
		{"configured limit", addFile("a.go", strings.Repeat("x", 81)), []int{1}},
	}, WithLongLineChars(80))
}

func TestRuleNoNewlineAtEOF(t *testing.T) {
	runRuleCases(t, RuleNoNewlineAtEOF, SeverityInfo, []ruleCase{
		{"added last line without newline", "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n a\n+b\n\\ No newline at end of file\n", []int{2}},
		{"pre-existing missing newline", "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-x\n+y\n a\n\\ No newline at end of file\n", nil},
		{"fixed missing newline", "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n", nil},
	})
}

func TestRuleBinaryAdded(t *testing.T) {
	runRuleCases(t, RuleBinaryAdded, SeverityInfo, []ruleCase{
		{"new binary", "diff --git a/logo.png b/logo.png\nnew file mode 100644\nindex 0..1\nBinary files /dev/null and b/logo.png differ\n", []int{0}},
		{"modified binary", "diff --git a/logo.png b/logo.png\nindex 1..2 100644\nBinary files a/logo.png and b/logo.png differ\n", nil},
		{"deleted binary", "diff --git a/logo.png b/logo.png\ndeleted file mode 100644\nindex 1..0\nBinary files a/logo.png and /dev/null differ\n", nil},
	})
}

func lines(n int, text string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = text
	}
	return out
}

func TestRuleLargeHunk(t *testing.T) {
	runRuleCases(t, RuleLargeHunk, SeverityInfo, []ruleCase{
		{"hunk over the limit", editFile("a.go", lines(200, "x")...), []int{9}},
		{"hunk at the limit", editFile("a.go", lines(199, "x")...), nil},
		{"deleted file", "diff --git a/a.go b/a.go\ndeleted file mode 100644\n--- a/a.go\n+++ /dev/null\n@@ -1,300 +0,0 @@\n" + strings.Repeat("-x\n", 300), nil},
	})
	runRuleCases(t, RuleLargeHunk, SeverityInfo, []ruleCase{
		{"configured limit", editFile("a.go", lines(10, "x")...), []int{9}},
	}, WithLargeHunkLines(10))
}

func TestRuleLargeFile(t *testing.T) {
	runRuleCases(t, RuleLargeFile, SeverityWarning, []ruleCase{
		{"file over the limit", addFile("a.go", lines(801, "x")...), []int{0}},
		{"file at the limit", addFile("a.go", lines(800, "x")...), nil},
		// Machine-written as the base says (R-CRITIC-7): the file was
		// there under that name, or its base version has the marker.
		{"lock file", editFile("package-lock.json", lines(2000, "x")...), nil},
		{"vendored code", editFile("vendor/github.com/x/y/y.go", lines(2000, "x")...), nil},
		{"generated code", editTop("api/api.go", "// Code generated by protoc-gen-go. DO NOT EDIT.", lines(2000, "x")...), nil},
		// What the change alone says is a claim, reviewed.
		{"new lock file", addFile("package-lock.json", lines(2000, "x")...), []int{0}},
		{"new vendored code", addFile("vendor/github.com/x/y/y.go", lines(2000, "x")...), []int{0}},
		{"new file with the marker", addFile("api/api.go", append([]string{"// Code generated by protoc-gen-go. DO NOT EDIT."}, lines(2000, "x")...)...), []int{0}},
		{"marker added to a hand-written file", editTop("api/api.go", "package api", append([]string{"// Code generated by protoc-gen-go. DO NOT EDIT."}, lines(2000, "x")...)...), []int{0}},
	})
	// A large file does not also get a large-hunk finding.
	c := review(t, addFile("a.go", lines(801, "x")...))
	for _, f := range c.Findings {
		if f.Rule == RuleLargeHunk {
			t.Errorf("large file also reported a large hunk: %+v", f)
		}
	}
}

func TestRuleMissingTests(t *testing.T) {
	runRuleCases(t, RuleMissingTests, SeverityWarning, []ruleCase{
		{"Go without test", addFile("svc/b.go", "package svc") + addFile("svc/a.go", "package svc"), []int{0}},
		{"Go with Go test", addFile("svc/a.go", "package svc") + addFile("svc/a_test.go", "package svc"), nil},
		{"pytest test_ file", addFile("app/x.py", "x = 1") + addFile("app/test_x.py", "def test(): pass"), nil},
		{"pytest _test file", addFile("app/x.py", "x = 1") + addFile("app/x_test.py", "def test(): pass"), nil},
		{"Jest .test.ts", addFile("web/x.ts", "export {}") + addFile("web/x.test.ts", "it('x', () => {})"), nil},
		{"spec file", addFile("web/x.js", "1") + addFile("web/x.spec.js", "1"), nil},
		{"tests directory", addFile("lib/x.rs", "fn f() {}") + addFile("tests/it.rs", "fn t() {}"), nil},
		{"docs only", addFile("README.md", "hello"), nil},
		{"only deletions", "--- a/a.go\n+++ b/a.go\n@@ -1,2 +1 @@\n x\n-y\n", nil},
	})
	c := review(t, addFile("svc/b.go", "package svc")+addFile("svc/a.go", "package svc"))
	for _, f := range c.Findings {
		if f.Rule == RuleMissingTests && (f.File != "svc/a.go" || !strings.Contains(f.Message, "2 source files")) {
			t.Errorf("missing-tests finding %+v, want it on svc/a.go counting 2 files", f)
		}
	}
}

func TestRuleFocusedTest(t *testing.T) {
	runRuleCases(t, RuleFocusedTest, SeverityWarning, []ruleCase{
		{"it.only", addFile("web/x.test.ts", "it.only('works', () => {});"), []int{1}},
		{"describe.only", addFile("web/x.spec.js", "describe.only('x', () => {"), []int{1}},
		{"fdescribe and fit", addFile("web/x.spec.js", "fdescribe('x', () => {", "  fit('y', () => {});"), []int{1, 2}},
		{"plain it", addFile("web/x.test.ts", "it('works', () => {});"), nil},
		{"identifier ending in fit", addFile("web/x.ts", "const y = outfit(x);"), nil},
	})
}

func TestRuleSkippedTest(t *testing.T) {
	runRuleCases(t, RuleSkippedTest, SeverityInfo, []ruleCase{
		{"it.skip", addFile("web/x.test.ts", "it.skip('works', () => {});"), []int{1}},
		{"xit", addFile("web/x.spec.js", "xit('y', () => {});"), []int{1}},
		{"pytest skip", addFile("app/test_x.py", "@pytest.mark.skip(reason='flaky')"), []int{1}},
		{"plain test", addFile("app/test_x.py", "def test_x(): pass"), nil},
		{"skipWhile is not skip", addFile("web/x.ts", "stream.skipWhile(x)"), nil},
	})
}
