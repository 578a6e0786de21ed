package app

import (
	"bytes"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
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

func TestOperandsFromQuery(t *testing.T) {
	good := map[string]Operands{
		"a=1&b=2":                       {1, 2},
		"b=2&a=1":                       {1, 2},
		"a=4294967295&b=4294967295":     {4294967295, 4294967295},
		"x=9&a=2200000000&b=3199999999": {2200000000, 3199999999},
	}
	for q, want := range good {
		v, err := url.ParseQuery(q)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := OperandsFromQuery(v); !ok || got != want {
			t.Errorf("%q: %v %v, want %v", q, got, ok, want)
		}
	}
	for _, q := range []string{"", "a=1", "b=2", "a=1&b=", "a=-1&b=2", "a=4294967296&b=1", "a=x&b=1", "a=1.0&b=1", "a=+1&b=1"} {
		v, _ := url.ParseQuery(q)
		if got, ok := OperandsFromQuery(v); ok {
			t.Errorf("%q accepted as %v", q, got)
		}
	}
}

// The sum needs 64 bits: the oracle draws operands whose sum is above uint32's range.
func TestSumText(t *testing.T) {
	if got := string(SumText(Operands{4294967295, 4294967295})); got != "8589934590" {
		t.Fatalf("SumText = %s", got)
	}
	if got := string(SumText(Operands{0, 0})); got != "0" {
		t.Fatalf("SumText = %s", got)
	}
}

// The known values of framebench's fnv_matches_known_values.
func TestDigest(t *testing.T) {
	cases := map[string]string{
		"":       "0 cbf29ce484222325",
		"a":      "1 af63dc4c8601ec8c",
		"foobar": "6 85944171f73967e8",
	}
	for in, want := range cases {
		if got := string(Digest([]byte(in))); got != want {
			t.Errorf("Digest(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestJSONIn(t *testing.T) {
	var o Operands
	if err := json.Unmarshal([]byte(`{"a":2200000000,"b":3199999999}`), &o); err != nil {
		t.Fatal(err)
	}
	if got := string(JSONIn(o)); got != `{"sum":5399999999}` {
		t.Fatalf("JSONIn = %s", got)
	}
	if err := json.Unmarshal([]byte(`{"a":4294967296,"b":1}`), &o); err == nil {
		t.Fatal("an operand over uint32 accepted")
	}
}

func TestWaitFor(t *testing.T) {
	cases := []struct {
		ms      string
		present bool
		want    time.Duration
		ok      bool
	}{
		{"", false, 10 * time.Millisecond, true},
		{"25", true, 25 * time.Millisecond, true},
		{"0", true, 0, true},
		{"10000", true, 10 * time.Second, true},
		{"10001", true, 0, false},
		{"", true, 0, false},
		{"-1", true, 0, false},
		{"ten", true, 0, false},
	}
	for _, c := range cases {
		got, ok := WaitFor(c.ms, c.present)
		if got != c.want || ok != c.ok {
			t.Errorf("WaitFor(%q, %v) = %v, %v; want %v, %v", c.ms, c.present, got, ok, c.want, c.ok)
		}
	}
}

func TestDelayWaitsAndAnswersTheMilliseconds(t *testing.T) {
	start := time.Now()
	if got := string(Delay(3 * time.Millisecond)); got != "3" {
		t.Fatalf("Delay(3ms) = %q", got)
	}
	if took := time.Since(start); took < 3*time.Millisecond {
		t.Fatalf("Delay(3ms) returned after %v", took)
	}
}
