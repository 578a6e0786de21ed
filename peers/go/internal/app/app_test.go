package app

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func fixtures(t *testing.T) string {
	root := filepath.Join("..", "..", "..", "..", "fixtures")
	if env := os.Getenv("FRAMEBENCH_FIXTURES"); env != "" {
		root = env
	}
	return root
}

// The Go template renders bytes identical to what minijinja renders for the Rust frameworks.
func TestTemplateMatchesTheOracle(t *testing.T) {
	want, err := os.ReadFile(filepath.Join(fixtures(t), "expected", "template.html"))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := CompileTemplate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("template differs from expected/template.html:\n%s", got)
	}
}

func TestEscapeMatchesMinijinja(t *testing.T) {
	cases := map[string]string{
		`<a href="/x">it's & that</a>`: "&lt;a href=&quot;&#x2f;x&quot;&gt;it&#x27;s &amp; that&lt;&#x2f;a&gt;",
		"naïve → ✓":                    "naïve → ✓",
		"":                             "",
	}
	for in, want := range cases {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestJSON(t *testing.T) {
	if got := string(JSON()); got != `{"message":"Hello, World!"}` {
		t.Fatalf("JSON() = %s", got)
	}
}

func TestSafeName(t *testing.T) {
	for _, ok := range []string{"mysrc", "webupload.html", "a-b_c.d"} {
		if !SafeName(ok) {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{"", ".", "..", ".hidden", "../x", "a/b", `a\b`, "a\x00b", "%2e%2e", "a b", "é"} {
		if SafeName(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}
