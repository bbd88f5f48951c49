package diff

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// apply rebuilds both texts from an edit script: the old from its Same and Removed lines, the new
// from its Same and Added lines, checking the line numbers on the way.
func apply(t *testing.T, lines []Line) (old, new []string) {
	t.Helper()
	for _, l := range lines {
		if l.Op != Added {
			old = append(old, l.Text)
			if l.Old != len(old) {
				t.Fatalf("line %q: old number %d, want %d", l.Text, l.Old, len(old))
			}
		}
		if l.Op != Removed {
			new = append(new, l.Text)
			if l.New != len(new) {
				t.Fatalf("line %q: new number %d, want %d", l.Text, l.New, len(new))
			}
		}
	}
	return old, new
}

// lcsLen is the length of the longest common subsequence, by the plain recurrence.
func lcsLen(a, b []string) int {
	prev := make([]int, len(b)+1)
	for i := range a {
		cur := make([]int, len(b)+1)
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(prev[j+1], cur[j])
			}
		}
		prev = cur
	}
	return prev[len(b)]
}

func TestLinesRebuildsBothTextsWithTheFewestEdits(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"a", "b", "c", "d", "}", "{", ""}
	for n := 0; n < 400; n++ {
		a := make([]string, r.IntN(12))
		for i := range a {
			a[i] = words[r.IntN(len(words))]
		}
		b := append([]string(nil), a...)
		for k := r.IntN(5); k > 0; k-- { // a few edits of a, so that they share lines
			switch i := r.IntN(len(b) + 1); {
			case r.IntN(2) == 0 && i < len(b):
				b = append(b[:i], b[i+1:]...)
			default:
				b = append(b[:i], append([]string{words[r.IntN(len(words))]}, b[i:]...)...)
			}
		}
		lines := Lines(a, b)
		old, new := apply(t, lines)
		if strings.Join(old, "\n") != strings.Join(a, "\n") || strings.Join(new, "\n") != strings.Join(b, "\n") {
			t.Fatalf("%q -> %q: the script rebuilds %q -> %q", a, b, old, new)
		}
		if _, _, same := Count(lines); same != lcsLen(a, b) {
			t.Fatalf("%q -> %q: keeps %d lines, the longest common subsequence has %d", a, b, same, lcsLen(a, b))
		}
	}
}

func TestUnifiedMatchesDiffU(t *testing.T) {
	old := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n"
	new := "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n"
	// diff -u old new with one line of context
	want := `--- old
+++ new
@@ -4,3 +4,3 @@
 4
-5
+five
 6
@@ -15 +15,2 @@
 15
+16
`
	if got := Unified("old", "new", old, new, 1); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// With three lines of context the two changes are still apart (9 unchanged lines between them);
	// with five they share one hunk.
	if n := len(Hunks(Lines(Split(old), Split(new)), 3)); n != 2 {
		t.Errorf("context 3: %d hunks, want 2", n)
	}
	hs := Hunks(Lines(Split(old), Split(new)), 5)
	if len(hs) != 1 || hs[0].Header() != "@@ -1,15 +1,16 @@" {
		t.Errorf("context 5: hunks %v", hs)
	}
}

func TestUnifiedRemovedBeforeAdded(t *testing.T) {
	got := Unified("a", "b", "x\ny\nz\n", "x\nY\nZ\nz\n", 0)
	want := "--- a\n+++ b\n@@ -2 +2,2 @@\n-y\n+Y\n+Z\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestIdenticalAndEmptyTexts(t *testing.T) {
	if got := Unified("a", "b", "same\ntext\n", "same\ntext", 3); got != "" {
		t.Errorf("identical lines: %q, want no diff", got)
	}
	if got, want := Unified("a", "b", "", "one\n", 3), "--- a\n+++ b\n@@ -0,0 +1 @@\n+one\n"; got != want {
		t.Errorf("from empty: %q, want %q", got, want)
	}
	if got, want := Unified("a", "b", "one\ntwo\n", "", 3), "--- a\n+++ b\n@@ -1,2 +0,0 @@\n-one\n-two\n"; got != want {
		t.Errorf("to empty: %q, want %q", got, want)
	}
}

func TestHunkCountsAgreeWithTheirLines(t *testing.T) {
	a := Split(strings.Repeat("keep\nold\n", 30))
	b := Split(strings.Repeat("keep\nnew\n", 15) + strings.Repeat("keep\nold\n", 15))
	for _, c := range []int{0, 1, 3} {
		for _, h := range Hunks(Lines(a, b), c) {
			var o, n int
			for _, l := range h.Lines {
				if l.Op != Added {
					o++
				}
				if l.Op != Removed {
					n++
				}
			}
			if o != h.OldLines || n != h.NewLines {
				t.Errorf("context %d, %s: has %d old and %d new lines", c, h.Header(), o, n)
			}
		}
	}
}

func ExampleUnified() {
	fmt.Print(Unified("1_naive.cu", "2_shared.cu", "load\nadd\nstore\n", "load\nsync\nadd\nstore\n", 1))
	// Output:
	// --- 1_naive.cu
	// +++ 2_shared.cu
	// @@ -1,2 +1,3 @@
	//  load
	// +sync
	//  add
}
