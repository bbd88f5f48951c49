package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cudalessons/cudalessons/lessons/compare"
)

// -readme rewrites a README whose generated block is stale (here: empty) with the block made from
// results/, keeps the text around it, and leaves a current README as it is.
func TestRewriteReadme(t *testing.T) {
	src, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	begin := strings.Index(string(src), "<!-- "+compare.LessonsBlock+": generated")
	end := strings.Index(string(src), "<!-- end of "+compare.LessonsBlock+" -->")
	if begin < 0 || end < begin {
		t.Fatal("README.md has no recorded results block")
	}
	line := strings.SplitN(string(src[begin:]), "\n", 2)[0]
	stale := string(src[:begin]) + line + "\nold numbers\n" + string(src[end:])
	path := filepath.Join(t.TempDir(), "README.md")
	if err := os.WriteFile(path, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rewriteReadme(path); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(src) {
		t.Error("the rewritten README differs from the committed one made from results/")
	}
	if err := rewriteReadme(path); err != nil {
		t.Fatal(err)
	}
}
