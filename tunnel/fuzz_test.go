package tunnel

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzSplit: Split never panics, and the words it returns, each put in
// single quotes (a quote in a word closed, escaped and reopened), split
// into the same words.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{"kubectl port-forward pod/app 8720:8720", `a "b \" c" 'd' e\ f`, "a | b", `"`, `\`, "''"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		words, err := Split(line)
		if err != nil {
			return
		}
		if len(words) == 0 {
			t.Fatalf("Split(%q): no words and no error", line)
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		again, err := Split(strings.Join(quoted, " "))
		if err != nil || !reflect.DeepEqual(again, words) {
			t.Fatalf("Split(%q) = %q; quoted back: %q, %v", line, words, again, err)
		}
	})
}
