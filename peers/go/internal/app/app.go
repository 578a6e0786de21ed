// Package app is what the two Go peers share: options, fixtures, the template, the JSON body,
// the answers of the query and body scenarios and of delay, the name check and the listener
// handed over by framebench.
//
// Both servers serve the routes of framebench's oracle (src/oracle.rs) from the same fixtures
// folder, and render the template to bytes identical to fixtures/expected/template.html.
package app

import (
	"bytes"
	"crypto/tls"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/template"
	"time"
)

// KeepAlive is the idle keep-alive timeout every framebench server is configured with.
const KeepAlive = 5 * time.Second

// MaxMessage is the largest WebSocket message an echo takes: Autobahn's largest (16 MiB), as
// raw's reference takes (src/frameworks/raw/ws.rs).
const MaxMessage = 16 << 20

// Options are the variants of framebench's `serve`: logging, io, and where to listen.
type Options struct {
	Fixtures string
	Logging  string // off, sink or stdout
	IO       string // memory or disk
	Addr     string // used only when no listener is passed as fd 3
	FD3      bool   // take the listening socket from file descriptor 3
	Redis    string // redis://127.0.0.1:PORT for the redis scenario; empty: /get answers 503
	Threads  int    // GOMAXPROCS; 0 leaves the runtime's default
	Protocol string // http1, h2c (HTTP/2 over cleartext with prior knowledge), h2 (HTTP/2 over TLS) or ws
	TLS      bool   // TLS, with the certificate framebench passes in the environment
}

// ParseOptions reads the command line: the same --threads, --logging, --io and --redis that
// framebench gives every server it starts in a child process (src/child.rs). --threads sets
// GOMAXPROCS.
func ParseOptions(args []string) (Options, error) {
	var o Options
	fs := flag.NewFlagSet("peer", flag.ContinueOnError)
	fs.StringVar(&o.Fixtures, "fixtures", "fixtures", "fixtures folder")
	fs.StringVar(&o.Logging, "logging", "off", "off, sink or stdout")
	fs.StringVar(&o.IO, "io", "memory", "memory or disk")
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:0", "loopback address to bind when not given fd 3")
	fs.BoolVar(&o.FD3, "fd3", false, "serve the listening socket passed as file descriptor 3")
	fs.StringVar(&o.Redis, "redis", "", "redis://127.0.0.1:PORT for GET /get?key=")
	fs.IntVar(&o.Threads, "threads", 0, "GOMAXPROCS (0: the runtime's default)")
	fs.StringVar(&o.Protocol, "protocol", "http1", "http1, h2c (HTTP/2 with prior knowledge), h2 (HTTP/2 over TLS, needs --tls), or ws (HTTP/1.1, the WebSocket echo at /ws)")
	fs.BoolVar(&o.TLS, "tls", false, "TLS (HTTP/1.1, or HTTP/2 with --protocol h2), with the certificate in $"+CertEnv+" and $"+KeyEnv)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.Threads < 0 {
		return o, fmt.Errorf("--threads %d: want 1 or more", o.Threads)
	}
	if o.Logging != "off" && o.Logging != "sink" && o.Logging != "stdout" {
		return o, fmt.Errorf("--logging %q: want off, sink or stdout", o.Logging)
	}
	if o.Protocol != "http1" && o.Protocol != "h2c" && o.Protocol != "h2" && o.Protocol != "ws" {
		return o, fmt.Errorf("--protocol %q: want http1, h2c, h2 or ws", o.Protocol)
	}
	if o.TLS && o.Protocol != "http1" && o.Protocol != "h2" {
		return o, fmt.Errorf("--tls with --protocol %s: over TLS only HTTP/1.1 and h2 are served", o.Protocol)
	}
	if !o.TLS && o.Protocol == "h2" {
		return o, fmt.Errorf("--protocol h2 is HTTP/2 over TLS: add --tls")
	}
	if o.IO != "memory" && o.IO != "disk" {
		return o, fmt.Errorf("--io %q: want memory or disk", o.IO)
	}
	return o, nil
}

// LogWriter is where request lines go: nil when logging is off, io.Discard for sink (the line
// is formatted, then dropped), stdout for stdout.
func (o Options) LogWriter() io.Writer {
	switch o.Logging {
	case "sink":
		return io.Discard
	case "stdout":
		return os.Stdout
	}
	return nil
}

// Listen returns the listener: fd 3 when framebench passed one, else a new loopback socket.
func (o Options) Listen() (net.Listener, error) {
	if o.FD3 {
		f := os.NewFile(3, "listener")
		if f == nil {
			return nil, errors.New("no file descriptor 3")
		}
		defer f.Close()
		return net.FileListener(f)
	}
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("refusing to bind %s: loopback addresses only", o.Addr)
	}
	return net.Listen("tcp", o.Addr)
}

// CertEnv and KeyEnv name the variables framebench passes the run's certificate and its key
// in, as PEM (src/transport/tls.rs): never a file on disk.
const (
	CertEnv = "FRAMEBENCH_TLS_CERT_PEM"
	KeyEnv  = "FRAMEBENCH_TLS_KEY_PEM"
)

// TLSConfig is the server's TLS configuration under --tls: the run's certificate from the
// environment, TLS 1.2 and 1.3, the run's protocol's ALPN name alone (h2 under --protocol h2,
// else http/1.1), and crypto/tls's defaults otherwise (session tickets for resumption).
func TLSConfig(protocol string) (*tls.Config, error) {
	alpn := "http/1.1"
	if protocol == "h2" {
		alpn = "h2"
	}
	cert, err := tls.X509KeyPair([]byte(os.Getenv(CertEnv)), []byte(os.Getenv(KeyEnv)))
	if err != nil {
		return nil, fmt.Errorf("--tls: no certificate in $%s and $%s: %w", CertEnv, KeyEnv, err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{alpn},
	}, nil
}

// Announce prints the first line of the serve contract: https under --tls.
func (o Options) Announce(ln net.Listener) {
	scheme := "http"
	if o.TLS {
		scheme = "https"
	}
	fmt.Printf("listening on %s://%s\n", scheme, ln.Addr())
}

// Fixtures are the files every route serves, loaded once.
type Fixtures struct {
	StaticDir string
	PasteDir  string
	staticMem map[string][]byte
	pasteMem  map[string][]byte
}

// Load reads every static file and paste into memory.
func Load(root string) (*Fixtures, error) {
	f := &Fixtures{
		StaticDir: filepath.Join(root, "static"),
		PasteDir:  filepath.Join(root, "pastes"),
	}
	var err error
	if f.staticMem, err = readFlat(f.StaticDir); err != nil {
		return nil, err
	}
	if f.pasteMem, err = readFlat(f.PasteDir); err != nil {
		return nil, err
	}
	return f, nil
}

func readFlat(dir string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("missing fixtures folder %s: %w", dir, err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		if e.Type().IsRegular() {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				return nil, err
			}
			out[e.Name()] = b
		}
	}
	return out, nil
}

// SafeName is framebench's rule (src/fixtures.rs): 1 to 128 bytes of [A-Za-z0-9._-], not
// starting with a dot.
func SafeName(name string) bool {
	if name == "" || len(name) > 128 || name[0] == '.' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// Lookup returns a paste or static file and the status to answer: 200, 400 or 404.
func (f *Fixtures) Lookup(static bool, name string, io string) ([]byte, int) {
	if !SafeName(name) {
		return nil, 400
	}
	dir, mem := f.PasteDir, f.pasteMem
	if static {
		dir, mem = f.StaticDir, f.staticMem
	}
	if io == "memory" {
		if b, ok := mem[name]; ok {
			return b, 200
		}
		return nil, 404
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil, 404
	}
	return b, 200
}

// ContentType is the type framebench's own static handlers send (src/fixtures.rs).
func ContentType(name string) string {
	switch filepath.Ext(name) {
	case ".html":
		return "text/html"
	case ".css":
		return "text/css"
	case ".js":
		return "text/javascript"
	case ".txt":
		return "text/plain"
	}
	return "application/octet-stream"
}

// Message is the json scenario's object.
type Message struct {
	Message string `json:"message"`
}

// JSON serializes the json scenario's body: called on every request.
func JSON() []byte {
	b, _ := json.Marshal(Message{Message: "Hello, World!"})
	return b
}

// Operands are the operands of the query and body scenarios: `?a=A&b=B` for query,
// `{"a":A,"b":B}` for json_in (framebench's handlers::Operands). Both are u32 in framebench, so
// a value outside uint32 is refused. The query tags are Fiber's QueryParser's: "required" makes
// a missing operand an error, as it is for serde. encoding/json has no such tag, so a JSON
// object without an operand decodes it as 0 (serde would refuse it).
type Operands struct {
	A uint32 `json:"a" query:"a,required"`
	B uint32 `json:"b" query:"b,required"`
}

// OperandsFromQuery reads a and b from a parsed query string (net/http's r.URL.Query()), other
// keys ignored. false when one is missing or not a decimal uint32: the caller answers 400.
func OperandsFromQuery(q url.Values) (Operands, bool) {
	a, errA := strconv.ParseUint(q.Get("a"), 10, 32)
	b, errB := strconv.ParseUint(q.Get("b"), 10, 32)
	if errA != nil || errB != nil {
		return Operands{}, false
	}
	return Operands{A: uint32(a), B: uint32(b)}, true
}

// Sum is the operands' sum, in 64 bits: the oracle's operands overflow 32.
func (o Operands) Sum() uint64 {
	return uint64(o.A) + uint64(o.B)
}

// SumText is the query scenario's body: the decimal sum.
func SumText(o Operands) []byte {
	return strconv.AppendUint(nil, o.Sum(), 10)
}

// Digest is the upload scenario's body: the body's length and its FNV-1a 64 digest as 16
// lowercase hex digits (framebench's oracle::digest_text), which proves the handler read every
// byte.
func Digest(body []byte) []byte {
	h := fnv.New64a()
	h.Write(body)
	return fmt.Appendf(nil, "%d %016x", len(body), h.Sum64())
}

// sumOut is the json_in answer's object.
type sumOut struct {
	Sum uint64 `json:"sum"`
}

// JSONIn is the json_in scenario's body, `{"sum":S}`, serialized with json.Marshal on every
// request (an Encoder would append a newline).
func JSONIn(o Operands) []byte {
	b, _ := json.Marshal(sumOut{Sum: o.Sum()})
	return b
}

// DelayMS is how long a delay request waits when its query names no ms (framebench's
// oracle::DELAY_MS); MaxDelayMS is the longest it may ask for (oracle::MAX_DELAY_MS).
const (
	DelayMS    = 10
	MaxDelayMS = 10_000
)

// WaitFor is the wait of a delay request from its ms parameter, present or not
// (framebench's handlers::delay_wait): DelayMS when it is missing; false when it is not a
// decimal uint64 or is over MaxDelayMS, which the caller answers 400.
func WaitFor(ms string, present bool) (time.Duration, bool) {
	n := uint64(DelayMS)
	if present {
		v, err := strconv.ParseUint(ms, 10, 64)
		if err != nil {
			return 0, false
		}
		n = v
	}
	if n > MaxDelayMS {
		return 0, false
	}
	return time.Duration(n) * time.Millisecond, true
}

// Delay waits d with time.Sleep, which parks the handler's goroutine on the Go runtime's
// timer (net/http and Fiber both run a connection's requests on a goroutine), and returns the
// delay scenario's body: the milliseconds waited, in decimal.
func Delay(d time.Duration) []byte {
	time.Sleep(d)
	return strconv.AppendInt(nil, d.Milliseconds(), 10)
}

//go:embed page.tmpl
var pageSource string

// Escape escapes text as minijinja's HTML auto-escaping does: & < > " ' and /. Go's
// html/template escapes differently (&#34; &#39;, no slash), so the peers render with
// text/template and this function.
var Escape = strings.NewReplacer(
	"&", "&amp;",
	"<", "&lt;",
	">", "&gt;",
	`"`, "&quot;",
	"'", "&#x27;",
	"/", "&#x2f;",
).Replace

type entry struct{ Name, Note string }

type page struct {
	Title, Intro string
	Entries      []entry
}

// The data of src/fixtures.rs's page(): the same ten entries.
var pageData = page{
	Title: "Pastes & snippets",
	Intro: `Ten recent pastes. Names are user input, so "everything" is escaped <always>.`,
	Entries: []entry{
		{"mysrc", "A tiny paste store in Rust"},
		{"<script>alert('xss')</script>", "must render as text, not run"},
		{"Tom & Jerry", "ampersand in a name"},
		{`"quoted"`, "double quotes"},
		{"it's", "a single quote"},
		{"naïve café", "Latin-1 range text"},
		{"日本語のテキスト", "CJK text"},
		{"Ünïcödé → ✓", "arrows and marks"},
		{"a<b && c>d", "operators"},
		{"plain", "nothing to escape"},
	},
}

// Template is the page template, compiled once at startup.
type Template struct{ t *template.Template }

// CompileTemplate compiles the page.
func CompileTemplate() (*Template, error) {
	t, err := template.New("page").Funcs(template.FuncMap{
		"esc": Escape,
		"inc": func(i int) string { return strconv.Itoa(i + 1) },
	}).Parse(pageSource)
	if err != nil {
		return nil, err
	}
	return &Template{t}, nil
}

// Render renders the page: called on every request.
func (t *Template) Render() ([]byte, error) {
	var buf bytes.Buffer
	if err := t.t.Execute(&buf, pageData); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Fail prints a one-line error and exits 1 (2 for bad flags).
func Fail(code int, err error) {
	fmt.Fprintln(os.Stderr, "error:", err)
	os.Exit(code)
}

// Setup is what both peers do before they route: read the command line (exit 2 on a bad one),
// set GOMAXPROCS from --threads, load the fixtures, compile the template and connect the
// store.
func Setup(args []string) (Options, *Fixtures, *Template, *Store) {
	opts, err := ParseOptions(args)
	if err != nil {
		Fail(2, err)
	}
	if opts.Threads > 0 {
		runtime.GOMAXPROCS(opts.Threads)
	}
	fx, err := Load(opts.Fixtures)
	if err != nil {
		Fail(1, err)
	}
	tmpl, err := CompileTemplate()
	if err != nil {
		Fail(1, err)
	}
	store, err := NewStore(opts.Redis)
	if err != nil {
		Fail(2, err)
	}
	return opts, fx, tmpl, store
}
