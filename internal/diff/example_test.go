package diff_test

import (
	"fmt"

	"github.com/criticizer/criticizer/internal/diff"
)

func ExampleParseString() {
	d, err := diff.ParseString(`diff --git a/greet.go b/greet.go
index 3b18e51..a042389 100644
--- a/greet.go
+++ b/greet.go
@@ -1,3 +1,3 @@ package greet
 func Hello() string {
-	return "hello"
+	return "hello, world"
 }
`)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range d.Files {
		for _, h := range f.Hunks {
			for _, l := range h.Lines {
				if l.Kind == diff.Added {
					fmt.Printf("%s:%d: %s\n", f.Path(), l.NewLine, l.Text)
				}
			}
		}
	}
	fmt.Printf("%+v\n", d.Stats())
	// Output:
	// greet.go:2: 	return "hello, world"
	// {Files:1 Additions:1 Deletions:1}
}
